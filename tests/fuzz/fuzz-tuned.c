/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the tuned profile reader (lib/interop/tuned-*.c): the input is a tuned.conf
 * that may include a fixed profile ("base") and a variables file; it is parsed, merged, its
 * variables and functions expanded, and mapped. What must hold: an import either fails with a
 * message naming a file, or gives a JSON object that serialises, with at most as many unsupported
 * options as notes, each note with a file and a message. The input is also the profile's script
 * (its start() mapped), and read as a variables file and as a tuned CPU list. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "tuned-import.h"

static const char *input;

static const struct {
        const char *path, *text;
} files[] = {
        { "/usr/lib/tuned/base/tuned.conf",
          "[main]\nsummary=base\n[variables]\ninclude=/etc/tuned/v.conf\n[sysctl]\nvm.swappiness=10\n"
          "[bootloader]\ncmdline_base=+skew_tick=1 quiet\n[scheduler]\nisolated_cores=${isolated_cores}\n" },
        { "/etc/tuned/v.conf", "isolated_cores=${f:calc_isolated_cores:1}\n" },
};

static void split(void *userdata, unsigned cores_per_node, CpuSet *ret) {
        cpu_set_zero(ret);
        for (unsigned c = cores_per_node; c < 8; c++)
                cpu_set_add(ret, c);
}

static int read_file(void *userdata, const char *path, bool host_path, char **ret) {
        const char *text = NULL;
        /* The input is also its own script ([script] script=${i:PROFILE_DIR}/script.sh). */
        if (streq(path, "/usr/lib/tuned/f/tuned.conf") || streq(path, "/usr/lib/tuned/f/script.sh"))
                text = input;
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                if (streq(path, files[i].path))
                        text = files[i].text;
        if (!text)
                return -ENOENT;
        *ret = strdup(text);
        return *ret ? 0 : -ENOMEM;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = strndup((const char *) data, size);
        if (!s)
                return 0;
        input = s;

        TunedEnv env = { .split = split, .read_file = read_file };
        cpu_set_add_range(&env.online, 0, 7);
        cpu_set_add_range(&env.present, 0, 9);
        TunedImport t = {};
        Error e = {};
        int r = tuned_import(&env, "f", /* dir= */ false, &t, &e);
        if (r == 0) {
                if (!json_is_object(t.profile) || t.n_unsupported > t.n_notes)
                        abort();
                for (size_t i = 0; i < t.n_notes; i++)
                        if (!t.notes[i].file || !t.notes[i].message)
                                abort();
                free(json_dumps(t.profile, 0));
        } else if (r == -EINVAL && (!e.file || !e.message))
                abort();
        tuned_import_done(&t);
        error_done(&e);

        TunedIni ini = {};
        if (tuned_ini_parse(s, "v.conf", /* allow_no_value= */ true, &ini, &e) == 0)
                tuned_ini_done(&ini);
        error_done(&e);

        CpuSet set;
        (void) tuned_cpulist_parse(s, &set);
        return 0;
}
