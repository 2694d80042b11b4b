/* Model references (vit_resolve_model): folders, or names in the Hugging Face cache. */
#include "vit/vit.h"

#include "vit/io/hub.h"

int vit_resolve_model(const char *model, char *dir, size_t size, vit_error *err) {
    if (!model || !*model) return vit_fail(err, "no model given (a folder or org/name)");
    return hub_resolve_cached(model, dir, size, err);
}
