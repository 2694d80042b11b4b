/* vit serve's web page (vit/cli/page/index.html), built into the binary: the Makefile writes its
 * bytes as a C array into $(BUILD)/vit/cli/serve_page.c. */
#ifndef VIT_CLI_SERVE_PAGE_H
#define VIT_CLI_SERVE_PAGE_H

#include <stddef.h>

extern const unsigned char serve_page_html[];
extern const size_t serve_page_html_size;

#endif
