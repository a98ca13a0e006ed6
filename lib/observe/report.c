/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "report.h"
#include "strv.h"

/* One check of the report: a value against its limit, or why it was not measured. */
static json_t *check_entry(const char *check, double value, double limit, const char *unit, const char *reason,
                           int cpu) {
        bool measured = !reason;
        const char *verdict = !measured ? "not measured" : value > limit ? "over" : "within";
        json_t *o = json_pack("{s:s, s:f, s:f, s:s, s:s, s:s?}", "check", check, "value", measured ? value : 0.0,
                              "limit", limit, "unit", unit, "verdict", verdict, "reason", reason);
        if (o && cpu >= 0 && json_object_set_new(o, "cpu", json_integer(cpu)) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static json_t *hwlat_check(const CheckInput *in) {
        json_t *hwlat = json_object_get(in->hardware, "hwlat");
        if (!json_is_true(json_object_get(hwlat, "ran")))
                return check_entry("hwlat", 0, in->limits.hwlat_max_us, "µs",
                                   json_string_value(json_object_get(hwlat, "reason")) ?: "hwlat did not run", -1);
        size_t i;
        json_t *c;
        int cpu = -1;
        json_int_t max = json_integer_value(json_object_get(hwlat, "max_us"));
        json_array_foreach (json_object_get(hwlat, "cpu"), i, c)
                if (cpu < 0 || json_integer_value(json_object_get(c, "max_us")) == max)
                        cpu = (int) json_integer_value(json_object_get(c, "cpu"));
        return check_entry("hwlat", (double) max, in->limits.hwlat_max_us, "µs", NULL, cpu);
}

/* The settings: over the "limit" of none bad. */
static json_t *settings_check(const CheckInput *in) {
        size_t i, bad = 0;
        json_t *s;
        json_array_foreach (json_object_get(in->hardware, "settings"), i, s)
                bad += streq_ptr(json_string_value(json_object_get(s, "verdict")), "bad");
        return check_entry("settings", (double) bad, 0, "bad", NULL, -1);
}

/* The noisiest CPU's share of time osnoise could not run, in %. */
static json_t *noise_check(const CheckInput *in) {
        if (!in->audit || in->audit_reason)
                return check_entry("noise", 0, in->limits.noise_max_percent, "%",
                                   in->audit_reason ?: "audit did not run", -1);
        size_t i;
        json_t *c;
        double most = -1;
        int cpu = -1;
        json_array_foreach (json_object_get(in->audit, "cpu"), i, c) {
                json_t *on = json_object_get(c, "osnoise");
                if (!json_is_object(on))
                        continue;
                double noise = 100.0 - json_number_value(json_object_get(on, "available_percent"));
                if (noise > most) {
                        most = noise;
                        cpu = (int) json_integer_value(json_object_get(c, "cpu"));
                }
        }
        if (cpu < 0)
                return check_entry("noise", 0, in->limits.noise_max_percent, "%",
                                   "osnoise ran but gave no period of the CPUs", -1);
        return check_entry("noise", most, in->limits.noise_max_percent, "%", NULL, cpu);
}

/* The largest wake-up latency of any CPU, IRQ or thread. */
static json_t *latency_check(const CheckInput *in) {
        if (!in->latency)
                return check_entry("latency", 0, in->limits.latency_max_us, "µs",
                                   in->latency_reason ?: "latency was not measured", -1);
        size_t i;
        json_t *c;
        double most = -1;
        int cpu = -1;
        json_array_foreach (json_object_get(in->latency, "cpu"), i, c)
                for (unsigned k = 0; k < 2; k++) {
                        json_t *s = json_object_get(c, k ? "irq" : "thread");
                        double v = json_number_value(json_object_get(s, "max_us"));
                        if (json_is_object(s) && v > most) {
                                most = v;
                                cpu = (int) json_integer_value(json_object_get(c, "cpu"));
                        }
                }
        if (cpu < 0)
                return check_entry("latency", 0, in->limits.latency_max_us, "µs", "no CPU gave a sample", -1);
        return check_entry("latency", most, in->limits.latency_max_us, "µs", NULL, cpu);
}

int check_report_document(const CheckInput *in, json_t **ret) {
        _cleanup_(json_decrefp) json_t *checks = json_array();
        json_t *(* const makers[])(const CheckInput *in) = { hwlat_check, settings_check, noise_check, latency_check };
        bool over = false, missing = false;
        if (!checks)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(makers); i++) {
                json_t *o = makers[i](in);
                if (!o || json_array_append_new(checks, o) < 0)
                        return -ENOMEM;
                const char *v = json_string_value(json_object_get(o, "verdict"));
                over = over || streq(v, "over");
                missing = missing || streq(v, "not measured");
        }
        json_t *doc =
                json_pack("{s:O, s:s?, s:s, s:s, s:s, s:i, s:{s:i, s:i, s:f, s:s}, s:O, s:s, s:O, s:O?, s:O?}", "host",
                          in->host, "profile", in->profile, "cpus", in->cpus, "source", in->source, "date", in->date,
                          "seconds", (int) in->seconds, "limits", "hwlat_max_us", (int) in->limits.hwlat_max_us,
                          "latency_max_us", (int) in->limits.latency_max_us, "noise_max_percent",
                          in->limits.noise_max_percent, "from", in->limits.from, "checks", checks, "verdict",
                          over              ? "over"
                                  : missing ? "incomplete"
                                            : "within",
                          "hardware", in->hardware, "audit", in->audit, "latency", in->latency);
        if (!doc)
                return -ENOMEM;
        *ret = doc;
        return 0;
}
