/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the boot backend's files share: boot.c (the verbs, BLS entries and etc/kernel/cmdline) and
 * boot-grub.c (GRUB's drop-in). */

#include "backend.h"

#define GRUB_DROPIN "etc/default/grub.d/rtpart.cfg"

/* Whether the arguments in [b, e) leave a '"' open: the kernel (and cmdline_get()) reads everything
 * after it as part of that argument, an argument added after it too. */
bool boot_quote_open(const char *b, const char *e);
/* The reason for -EBADMSG when a file's arguments leave a quote open: they cannot be edited. */
int boot_refuse_open_quote(KnobResult *ret, const char *file, const char *what);

/* GRUB's kernel arguments: the base (what etc/default/grub and the drop-ins before rtpart's give
 * GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT when sourced) and rtpart's drop-in. */
typedef struct Grub {
        char *linux_, *default_;                 /* the base's values ("" when unset) */
        bool dropin;                             /* rtpart's drop-in exists */
        bool restated;                           /* an older rtpart's drop-in, which restated both variables */
        char *restated_linux, *restated_default; /* its values (NULL: not restated) */
        char **set;                              /* "k=v" or "k": what rtpart sets, in the order it added them */
        char **unset;                            /* "k": what rtpart removes */
        char **was;   /* "k=v" or "k": a key's value in the base when rtpart took it (none: absent) */
        char **takes; /* "VARIABLE word": a word of the base's value the drop-in takes out */
} Grub;

void grub_done(Grub *g);
/* -EBADMSG with *ret_why (what, where and the fix) when the base's values cannot be known without
 * running the files, or the drop-in is not as rtpart writes it. */
int grub_load(Root *root, Grub *ret, char **ret_why);
/* GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT as grub-mkconfig has them once it sourced
 * rtpart's drop-in: what its shell makes of them, computed. */
int grub_values(const Grub *g, char **ret_linux, char **ret_default);
/* Whether writing value to key gives the key back to the base: rtpart owns it and value is what
 * the base gave it when rtpart took it (revert). The base's value is then GRUB's, whatever the
 * user made it since. */
bool grub_gives_back(const Grub *g, const char *key, const char *value);
/* The value GRUB's configuration gives key; NULL (and 0) when absent. */
int grub_get(const Grub *g, const char *key, char **ret);
/* Sets key to value (NULL: absent) through the drop-in. */
int grub_write(Root *root, const char *key, const char *value, KnobResult *ret);
