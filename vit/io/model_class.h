#ifndef VIT_MODEL_CLASS_H
#define VIT_MODEL_CLASS_H

#include "vit/base/error.h"
#include "vit/io/weights.h"
#include "vit/model/config.h"

/* dir/config.json read for the weights w: as model_config_load_tower when it names its class
 * (`architectures`); when it names none, a ViT, DeiT, text encoder (BERT, RoBERTa, XLM-R,
 * DistilBERT, MPNet) or CLIP tower alone is read as the class whose tensors w holds
 * (classifier.weight: ViTForImageClassification, ...; none: ViTModel, BertModel, CLIPVisionModel,
 * CLIPTextModel, ...), and a DeiT without them is refused (DeiTModel is not run). On failure cfg
 * holds nothing to free. */
int model_config_for_weights(const char *dir, config_tower tower, const weights *w,
                             model_config *cfg, vit_error *err);

#endif
