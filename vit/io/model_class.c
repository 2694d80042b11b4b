/* The class of a folder whose config.json names none. transformers' AutoModel builds a
 * model_type's base model and the task pipelines its task class; a config.json without
 * `architectures` (SigLIP 2's, many base models', hand-written ones) says neither, so the weights
 * say: the tensors of a classifier or a projection present, the class that holds them; absent,
 * the model without. */
#include "vit/io/model_class.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"
#include "vit/base/json.h"

/* Per model_type, in order: the first row whose tensor the weights hold gives `with`; none, the
 * last row's `without` (NULL: a class vit does not run). */
static const struct {
    const char *type, *tensor, *with, *without;
} by_tensor[] = {
    {"vit", "classifier.weight", "ViTForImageClassification", "ViTModel"},
    {"deit", "cls_classifier.weight", "DeiTForImageClassificationWithTeacher", NULL},
    {"deit", "classifier.weight", "DeiTForImageClassification", NULL}, /* DeiTModel: not run */
    {"bert", "classifier.weight", "BertForSequenceClassification", "BertModel"},
    {"clip_vision_model", "visual_projection.weight", "CLIPVisionModelWithProjection",
     "CLIPVisionModel"},
    {"clip_text_model", "text_projection.weight", "CLIPTextModelWithProjection", NULL},
};
enum { NUM_ROWS = sizeof by_tensor / sizeof by_tensor[0] };

/* The base model a row's model_type has without its head, for the refusal. */
static const char *base_name(const char *type) {
    return strcmp(type, "deit") == 0 ? "DeiTModel (no classifier.weight)"
                                     : "CLIPTextModel (no text_projection.weight)";
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
        if (weights_find(w, by_tensor[i].tensor)) return by_tensor[i].with;
        without = by_tensor[i].without;
    }
    if (!without)
        vit_fail(err,
                 "%s: names no class (no architectures) and the weights are a %s, which vit "
                 "does not run",
                 src, base_name(type));
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
    const int decided = cfg->family == FAMILY_PLAIN || (config_is_joint(cfg) && cfg->one_tower);
    if (!decided) return 0;
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
