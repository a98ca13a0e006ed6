/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The manager's metrics file (metrics.h renders it): rendered after every turn of the event loop
 * in which something happened, written only when its text changed. */

#include "manager.h"

typedef struct ManagerMetrics ManagerMetrics;

/* Writes METRICS_FILE into dir, relative to root (the managed root, or "/" for a --metrics-dir; not
 * owned), from now on. A directory that is missing or refuses the write costs one log line, never
 * a failure: the file is written at the next change after it can be. */
int manager_metrics_attach(Manager *m, Root *root, const char *dir, ManagerMetrics **ret);
/* Renders now and writes if the text changed (after manager_startup(), before the loop runs). */
void manager_metrics_flush(ManagerMetrics *mm);
ManagerMetrics *manager_metrics_free(ManagerMetrics *mm);
DEFINE_TRIVIAL_CLEANUP_FUNC(ManagerMetrics *, manager_metrics_free);
