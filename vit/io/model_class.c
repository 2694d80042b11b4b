/* The class of a folder whose config.json names none. transformers' AutoModel builds a
 * model_type's base model and the task pipelines its task class; a config.json without
 * `architectures` (SigLIP 2's, many base models', hand-written ones) says neither, so the weights
 * say: the tensors of a classifier or a projection present, the class that holds them; absent,
 * the model without. */
#include "vit/io/model_class.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"
#include "vit/base/json.h"

/* Per model_type, in order: the first row whose tensor (and `also`, when set) the weights hold
 * gives `with`; none, the last row's `without` (NULL: a class vit does not run). A sequence
 * classifier and a token classifier both have classifier.weight; what tells them apart is the
 * rest of the head: BERT's pooler (BertForTokenClassification has none), the dense layer before
 * it in RoBERTa's, XLM-R's and MPNet's (classifier.dense, out_proj), DistilBERT's
 * pre_classifier. */
static const struct {
    const char *type, *tensor, *also, *with, *without;
} by_tensor[] = {
    {"vit", "classifier.weight", NULL, "ViTForImageClassification", "ViTModel"},
    {"deit", "cls_classifier.weight", NULL, "DeiTForImageClassificationWithTeacher", NULL},
    {"deit", "classifier.weight", NULL, "DeiTForImageClassification", NULL}, /* DeiTModel */
    {"bert", "classifier.weight", "pooler.dense.weight", "BertForSequenceClassification", NULL},
    {"bert", "classifier.weight", NULL, "BertForTokenClassification", "BertModel"},
    {"roberta", "classifier.out_proj.weight", NULL, "RobertaForSequenceClassification", NULL},
    {"roberta", "classifier.weight", NULL, "RobertaForTokenClassification", "RobertaModel"},
    {"xlm-roberta", "classifier.out_proj.weight", NULL, "XLMRobertaForSequenceClassification",
     NULL},
    {"xlm-roberta", "classifier.weight", NULL, "XLMRobertaForTokenClassification",
     "XLMRobertaModel"},
    {"distilbert", "pre_classifier.weight", NULL, "DistilBertForSequenceClassification", NULL},
    {"distilbert", "classifier.weight", NULL, "DistilBertForTokenClassification",
     "DistilBertModel"},
    {"mpnet", "classifier.out_proj.weight", NULL, "MPNetForSequenceClassification", NULL},
    {"mpnet", "classifier.weight", NULL, "MPNetForTokenClassification", "MPNetModel"},
    {"clip_vision_model", "visual_projection.weight", NULL, "CLIPVisionModelWithProjection",
     "CLIPVisionModel"},
    {"clip_text_model", "text_projection.weight", NULL, "CLIPTextModelWithProjection",
     "CLIPTextModel"},
};
enum { NUM_ROWS = sizeof by_tensor / sizeof by_tensor[0] };

/* Whether w holds name with or without the type's base_model_prefix ("bert.pooler...": the
 * classifier's file; "pooler...": a base model's with a classifier added). */
static int holds(const weights *w, const char *type, const char *name) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", type, name);
    return weights_find(w, name) || weights_find(w, full);
}

/* Whether `architectures` is absent, null or empty: config.c then takes the type's first
 * class, which is what the weights must now say. */
static int names_no_class(const cJSON *root) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    return !list || cJSON_IsNull(list) || (cJSON_IsArray(list) && cJSON_GetArraySize(list) == 0);
}

/* The class for root's model_type from what w holds; NULL with err set when it is a class vit
 * does not run; "" when the type is not one whose class the weights decide. */
static const char *class_of(const cJSON *root, const weights *w, const char *src, vit_error *err) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const char *type = cJSON_IsString(t) ? t->valuestring : "vit", *without = "";
    for (int i = 0; i < NUM_ROWS; i++) {
        if (strcmp(by_tensor[i].type, type) != 0) continue;
        if (weights_find(w, by_tensor[i].tensor) &&
            (!by_tensor[i].also || holds(w, type, by_tensor[i].also)))
            return by_tensor[i].with;
        without = by_tensor[i].without;
    }
    if (!without)
        vit_fail(err,
                 "%s: names no class (no architectures) and the weights are a DeiTModel (no "
                 "classifier.weight), which vit does not run",
                 src);
    return without;
}

/* config.json's text with "architectures": [name] set (NULL when out of memory). */
static char *naming(cJSON *root, const char *name) {
    cJSON *list = cJSON_CreateArray();
    if (!list || !cJSON_AddItemToArray(list, cJSON_CreateString(name))) {
        cJSON_Delete(list);
        return NULL;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(root, "architectures");
    if (!cJSON_AddItemToObject(root, "architectures", list)) {
        cJSON_Delete(list);
        return NULL;
    }
    return cJSON_PrintUnformatted(root);
}

int model_config_for_weights(const char *dir, config_tower tower, const weights *w,
                             model_config *cfg, vit_error *err) {
    if (model_config_load_tower(dir, tower, cfg, err) != 0) return -1;
    const int decided = cfg->family == FAMILY_PLAIN || cfg->family == FAMILY_TEXT ||
                        (config_is_joint(cfg) && cfg->one_tower);
    if (!decided || cfg->open_clip) return 0; /* open_clip's config names no Hugging Face class */
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *root = json_load_object(path, err);
    if (!root) return model_config_free(cfg), -1;
    const char *name = names_no_class(root) ? class_of(root, w, path, err) : "";
    int rc = name ? 0 : -1;
    if (!name) model_config_free(cfg);
    if (name && *name && strcmp(name, config_architecture(cfg)) != 0) {
        char *json = naming(root, name); /* read again as if config.json had named it */
        model_config_free(cfg);
        rc = json ? model_config_parse_tower(json, path, tower, cfg, err)
                  : vit_fail(err, "%s: out of memory", path);
        free(json);
    }
    cJSON_Delete(root);
    return rc;
}
