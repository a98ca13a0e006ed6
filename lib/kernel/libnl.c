/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "libnl.h"

#define DEFINE_SYM(f) __typeof__(f) *sym_##f;
LIBNL_FUNCTIONS(DEFINE_SYM)
LIBNL_GENL_FUNCTIONS(DEFINE_SYM)
LIBNL_ROUTE_FUNCTIONS(DEFINE_SYM)
#undef DEFINE_SYM

/* dlopen()s one library and resolves its functions; *why says what failed (NULL: nothing). Kept
 * for the life of the process (RTLD_NODELETE), so that the pointers stay valid; libnl-route-3
 * registers its object types with libnl-3 as it is loaded (nl_msg_parse() finds them). */
#define LOAD_SYM(f) \
        if (!*why && !(sym_##f = (__typeof__(f) *) dlsym(dl, #f))) \
                *why = dlerror() ?: #f " not found";
static bool load_library(const char *soname, unsigned part, const char **why) {
        void *dl = dlopen(soname, RTLD_NOW | RTLD_NODELETE);
        if (!dl) {
                *why = dlerror() ?: "not found";
                return false;
        }
        if (part == LIBNL_GENL) {
                LIBNL_GENL_FUNCTIONS(LOAD_SYM)
        } else if (part == LIBNL_ROUTE) {
                LIBNL_ROUTE_FUNCTIONS(LOAD_SYM)
        } else {
                LIBNL_FUNCTIONS(LOAD_SYM)
        }
        return !*why;
}
#undef LOAD_SYM

#define LIBNL_CORE (1U << 7) /* libnl-3 itself, loaded with any part */

int libnl_load(LibnlParts parts, const char *purpose, char **ret_reason) {
        static unsigned loaded = 0;
        static const struct {
                unsigned part;
                const char *soname;
        } libs[] = {
                { LIBNL_CORE, LIBNL_SONAME },
                { LIBNL_GENL, LIBNL_GENL_SONAME },
                { LIBNL_ROUTE, LIBNL_ROUTE_SONAME },
        };
        const char *why = NULL;
        for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
                unsigned bit = libs[i].part;
                if ((loaded & bit) || (bit != LIBNL_CORE && !(parts & bit)))
                        continue;
                if (!load_library(libs[i].soname, bit == LIBNL_CORE ? 0 : bit, &why)) {
                        if (ret_reason && asprintf(ret_reason, "%s need %s: %s", purpose, libs[i].soname, why) < 0)
                                *ret_reason = NULL;
                        return -EOPNOTSUPP;
                }
                loaded |= bit;
        }
        return 0;
}
