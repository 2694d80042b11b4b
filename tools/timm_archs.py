#!/usr/bin/env python3
"""Writes vit/model/config_timm_archs.h: timm's VisionTransformer registrations
(timm/models/vision_transformer.py and deit.py), each architecture's model_args over
VisionTransformer's defaults, as create_model builds it before a config.json's own model_args.
A row's `why` is "" when vit runs the architecture, else what it would need (another block, MLP,
attention, norm or position scheme, a distillation token): vit refuses it naming that.

usage: /usr/bin/python3 tools/timm_archs.py TIMM_CHECKOUT COMMIT > vit/model/config_timm_archs.h
Reads the source with ast only: nothing of timm is imported or run."""
import ast
import sys

# VisionTransformer.__init__'s defaults for the arguments a row records
DEFAULTS = dict(img_size=0, patch_size=16, embed_dim=768, depth=12, num_heads=12, mlp_ratio=4.0,
                qkv_bias=True, init_values=None, class_token=True, no_embed_class=False,
                reg_tokens=0, pre_norm=False, fc_norm=None, global_pool="token")
ACTS = {None: "ACT_GELU", "gelu": "ACT_GELU", "gelu_tanh": "ACT_GELU_TANH",
        "quick_gelu": "ACT_QUICK_GELU", "swiglu": "ACT_SWIGLU"}
# arguments whose only value vit runs is VisionTransformer's default
PLAIN = dict(qk_norm=False, scale_attn_norm=False, scale_mlp_norm=False, proj_bias=True,
             pool_include_prefix=False, final_norm=True, pos_embed="learn", dynamic_img_pad=False)


def model_args(fn):
    """The keywords of `model_args = dict(...)` in one @register_model function, and whether it
    builds a distilled model; None when it builds another class (FlexiViT, NaFlexViT)."""
    args, distilled = None, False
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "model_args":
            if isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "dict":
                args = {k.arg: k.value for k in node.value.keywords}
        if isinstance(node, ast.keyword) and node.arg == "distilled":
            distilled = ast.literal_eval(node.value)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in (
                "_create_vision_transformer_flexi", "_create_naflexvit"):
            return None, False
    return args, distilled


OPS = {ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b, ast.Add: lambda a, b: a + b}


def literal(node):
    """A constant, or arithmetic on constants (mlp_ratio=2.66667 * 2); None for anything else."""
    if isinstance(node, ast.BinOp) and type(node.op) in OPS:
        a, b = literal(node.left), literal(node.right)
        return None if a is None or b is None else OPS[type(node.op)](a, b)
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def norm_eps(node, why):
    """LayerNorm's eps from norm_layer (timm's LayerNorm: 1e-6 by default)."""
    if node is None:
        return 1e-6, why
    t = ast.unparse(node)
    if t in ("LayerNorm", "nn.LayerNorm"):
        return (1e-6 if t == "LayerNorm" else 1e-5), why
    if t.startswith("partial(LayerNorm") or t.startswith("partial(nn.LayerNorm"):
        for k in node.keywords:
            if k.arg == "eps":
                return ast.literal_eval(k.value), why
        return (1e-6 if "nn." not in t else 1e-5), why
    return 1e-6, why or "its norm layer %s" % t


def facts(fn):
    args, distilled = model_args(fn)
    if args is None or "num_heads" not in args:
        return None
    row, why = dict(DEFAULTS), ""
    for key in DEFAULTS:
        if key in args:
            row[key] = literal(args[key])
    img = row["img_size"]
    row["img_size"] = img if isinstance(img, int) else (img[0] if img else 0)
    if isinstance(img, (tuple, list)) and img[0] != img[1]:
        why = "a %dx%d input" % tuple(img)
    act = args.get("act_layer")
    act = None if act is None else (act.value if isinstance(act, ast.Constant) else ast.unparse(act))
    mlp = args.pop("mlp_layer", None)
    if mlp is not None and ast.unparse(mlp) == "SwiGLUPacked" and act in ("nn.SiLU", "silu"):
        act = "swiglu"  # GluMlp(gate_last=False): silu(first half of fc1) * second half
    elif mlp is not None:
        why = why or "its MLP %s" % ast.unparse(mlp)
    if act not in ACTS:
        why = why or "its MLP's activation %s" % act
    row["act"] = ACTS.get(act, "ACT_GELU")
    row["eps"], why = norm_eps(args.get("norm_layer"), why)
    for key, what in (("block_fn", "block"), ("attn_layer", "attention"),
                      ("embed_layer", "patch embedding"), ("embed_norm_layer", "patch norm")):
        if key in args:
            why = why or "its %s %s" % (what, ast.unparse(args[key]))
    for key, plain in PLAIN.items():
        if key in args and literal(args[key]) != plain:
            why = why or "%s=%s" % (key, ast.unparse(args[key]))
    if distilled:
        why = "its distillation token and second head (VisionTransformerDistilled)"
    return fn.name, row, why


def c_row(name, r, why):
    fc = {None: -1, False: 0, True: 1}[r["fc_norm"]]
    return ('{"%s", %d, %d, %d, %d, %d, %.17g, %s, %gf, %d, %d, %d, %d, %d, %d, %d, "%s", "%s"},'
            % (name, r["img_size"], r["patch_size"], r["embed_dim"], r["depth"], r["num_heads"],
               r["mlp_ratio"], r["act"], r["eps"], int(r["qkv_bias"]),
               int(r["init_values"] is not None), int(r["class_token"]),
               int(r["no_embed_class"]), r["reg_tokens"], int(r["pre_norm"]), fc,
               r["global_pool"], why))


def main():
    root, commit = sys.argv[1], sys.argv[2]
    rows = []
    for path in ("timm/models/vision_transformer.py", "timm/models/deit.py"):
        tree = ast.parse(open("%s/%s" % (root, path)).read())
        for fn in tree.body:
            if isinstance(fn, ast.FunctionDef) and any(
                    getattr(d, "id", "") == "register_model" for d in fn.decorator_list):
                f = facts(fn)
                if f:
                    rows.append(f)
    print("/* clang-format off */")
    print("/* Generated by tools/timm_archs.py from huggingface/pytorch-image-models %s" % commit)
    print(" * (timm/models/vision_transformer.py, deit.py): each registered VisionTransformer, its")
    print(" * model_args over the class's defaults: name, img_size (0: pretrained_cfg's), patch,")
    print(" * embed_dim, depth, heads, mlp_ratio, act, eps, qkv_bias, layer scale (init_values),")
    print(" * class_token, no_embed_class, reg_tokens, pre_norm, fc_norm (-1: None), global_pool,")
    print(" * why: \"\" when vit runs it, else what it would need. */")
    for name, r, why in sorted(rows, key=lambda x: x[0]):
        print(c_row(name, r, why))


main()
