/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Words for JSON values in messages about files a person wrote or rtpart keeps. */

#include <jansson.h>

/* What v is, with its article, for "expected a string, found an integer": "an object", "an
 * array", "a string", "an integer", "a number" (a real), "a boolean" or "null". */
const char *json_kind(const json_t *v);
