#ifndef VIT_MODEL_CLASS_H
#define VIT_MODEL_CLASS_H

#include "vit/base/error.h"
#include "vit/io/weights.h"
#include "vit/model/config.h"

/* dir/config.json read for the weights w: as model_config_load_tower when it names its class
 * (`architectures`); when it names none, a ViT, DeiT, BERT or CLIP tower is read as the class
 * whose tensors w holds (classifier.weight: ViTForImageClassification, ...; none: ViTModel,
 * BertModel, CLIPVisionModel), and a DeiT or CLIP text tower without them is refused (DeiTModel
 * and CLIPTextModel are not run). On failure cfg holds nothing to free. */
int model_config_for_weights(const char *dir, config_tower tower, const weights *w,
                             model_config *cfg, vit_error *err);

#endif
