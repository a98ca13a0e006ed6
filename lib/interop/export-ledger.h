/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "export.h"
#include "ledger.h"

/* A VM of the ledger as the export writes a guest from (export_libvirt_elements()): its vCPUs'
 * CPUs, nodes and emulator CPUs as the ledger holds them; its cache share as that percentage of
 * the ways the split leaves guests (on the cache with the fewest), none without a share; its huge
 * page size, else the profile's default one. */
int export_reservation_from_vm(const ExportSplit *s, const LedgerVm *vm, ExportReservation *ret);
