/* Model references (vit_resolve_model): folders, or names in the Hugging Face cache, downloaded
 * into it when missing. */
#include "vit/vit.h"

#include "vit/io/hub.h"

int vit_resolve_model(const char *model, char *dir, size_t size, vit_error *err) {
    return vit_download_model(model, NULL, NULL, dir, size, err);
}

int vit_download_model(const char *model, vit_progress_fn progress, void *user, char *dir,
                       size_t size, vit_error *err) {
    if (!model || !*model) return vit_fail(err, "no model given (a folder or org/name)");
    return hub_resolve(model, progress, user, dir, size, err);
}
