#!/usr/bin/python3
"""ONNX Runtime's int8: an ONNX model rewritten as onnxruntime's quantize_dynamic writes it.

Every MatMul whose second input is a 2-D float weight becomes
    DynamicQuantizeLinear(A) -> MatMulInteger(A_q, W_q, A_zp, W_zp) -> Cast(float)
    -> Mul(., Mul(A_scale, W_scale))
with W quantised per output column, symmetric (int8 in [-127, 127], zero point 0: scale =
max |W[:, n]| / 127), the activations per tensor at run time (uint8, DynamicQuantizeLinear).
ONNX Runtime fuses that chain into its DynamicQuantizeMatMul kernel, as it does for
quantize_dynamic(..., weight_type=QInt8, per_channel=True). The patch embedding (Conv) and the
classifier (Gemm) stay float, as quantize_dynamic's MatMul-only op list leaves them. Written
with Debian's python3-onnx alone (onnxruntime's Python package is not in Debian).

usage: quantize.py SRC.onnx DST.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quantize_weight(w):
    """w [K, N] float -> (int8 [K, N], scale [N] float32), per column, symmetric."""
    absmax = np.abs(w).max(axis=0)
    scale = np.where(absmax > 0, absmax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def quantize_model(model):
    """Rewrites model's weight MatMuls in place; returns how many."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    nodes, done, used_float = [], 0, set()
    for node in graph.node:
        w_name = node.input[1] if node.op_type == "MatMul" and len(node.input) == 2 else None
        init = inits.get(w_name) if w_name else None
        if init is None or len(init.dims) != 2 or init.data_type != TensorProto.FLOAT:
            nodes.append(node)
            used_float.update(node.input)
            continue
        q, scale = quantize_weight(numpy_helper.to_array(init).astype(np.float32))
        base = f"{node.name or node.output[0]}_q{done}"
        graph.initializer.extend([
            numpy_helper.from_array(q, w_name + "_quantized"),
            numpy_helper.from_array(scale, w_name + "_scale"),
            numpy_helper.from_array(np.zeros(scale.shape, np.int8), w_name + "_zero_point"),
        ])
        a = node.input[0]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [a], [f"{base}_a_q", f"{base}_a_scale", f"{base}_a_zp"],
                             name=f"{base}_DynamicQuantizeLinear"),
            helper.make_node("MatMulInteger", [f"{base}_a_q", w_name + "_quantized", f"{base}_a_zp",
                                               w_name + "_zero_point"], [f"{base}_int32"],
                             name=f"{base}_MatMulInteger"),
            helper.make_node("Cast", [f"{base}_int32"], [f"{base}_float"], to=TensorProto.FLOAT,
                             name=f"{base}_Cast"),
            helper.make_node("Mul", [f"{base}_a_scale", w_name + "_scale"], [f"{base}_scales"],
                             name=f"{base}_scales_Mul"),
            helper.make_node("Mul", [f"{base}_float", f"{base}_scales"], [node.output[0]],
                             name=f"{base}_Mul"),
        ]
        done += 1
    del graph.node[:]
    graph.node.extend(nodes)
    # the float weights now unused go (the file shrinks as quantize_dynamic's does); the new ones stay
    keep = [t for t in graph.initializer if t.name not in inits or t.name in used_float]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    if not any(o.domain in ("", "ai.onnx") and o.version >= 10 for o in model.opset_import):
        raise ValueError("MatMulInteger needs opset 10 or later")
    return done


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    model = onnx.load(sys.argv[1])
    n = quantize_model(model)
    if n == 0:
        sys.exit(f"quantize.py: {sys.argv[1]} has no MatMul with a float weight")
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])
    print(f"quantize.py: {n} MatMuls to int8 in {sys.argv[2]}", file=sys.stderr)


if __name__ == "__main__":
    main()
