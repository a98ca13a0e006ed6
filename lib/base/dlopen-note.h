/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A library that rtpart loads on first use (dlopen) is not in the program's DT_NEEDED list, so
 * neither dpkg-shlibdeps nor a reader of the binary sees it. Each place that loads one declares it
 * in the program itself, as an ELF note in the section .note.dlopen (owner "FDO", type
 * 0x407c0c0a: the ELF dlopen metadata format packaging tools and systemd read): a NUL-terminated
 * JSON array of objects with "soname" (the names dlopen() is given, as a list), "feature",
 * "description" and "priority" ("required", "recommended" or "suggested"). The linker keeps note
 * sections whatever --gc-sections drops, so a program carries the notes of every object file it
 * links: tests/unit/shipped_libraries.py reads them as the program's dlopen list.
 *
 *   DLOPEN_NOTE(libfoo_note, "[{\"soname\":[\"libfoo.so.1\"],\"feature\":\"foo\",…}]");
 */

#include <stdint.h>

#define DLOPEN_NOTE_OWNER "FDO"
#define DLOPEN_NOTE_TYPE UINT32_C(0x407c0c0a)

/* Name and description are each padded to 4 bytes, as an ELF note's parts are. */
#define DLOPEN_NOTE(name, json) \
        __attribute__((used, section(".note.dlopen"), aligned(4))) static const struct { \
                uint32_t namesz, descsz, type; \
                char owner[(sizeof(DLOPEN_NOTE_OWNER) + 3) & ~(size_t) 3]; \
                char desc[(sizeof(json) + 3) & ~(size_t) 3]; \
        } name = { sizeof(DLOPEN_NOTE_OWNER), sizeof(json), DLOPEN_NOTE_TYPE, DLOPEN_NOTE_OWNER, json }
