/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "config.h"
#include "hwlat.h"
#include "report.h"
#include "strv.h"

/* The report as one HTML file a person opens anywhere: the style in the head, the charts inline
 * as SVG, no script, and nothing fetched (no link, no image, no address). */

static const char style[] = "body{font-family:sans-serif;max-width:64em;margin:1.5em auto;padding:0 1em;color:#222}"
                            "table{border-collapse:collapse;margin:.5em 0}"
                            "th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}"
                            "th{background:#f4f4f4}td.n{text-align:right}"
                            ".ok,.within{color:#1e7b34}.warn{color:#9a6700}"
                            ".bad,.over{color:#c0392b;font-weight:bold}.incomplete,.not{color:#666;font-style:italic}"
                            "svg{display:block;margin:.5em 0}footer{margin-top:2em;color:#666;font-size:small}";

/* s with &, <, >, " and ' written as entities. */
static void esc(StrBuf *b, const char *s) {
        for (const char *p = s ? s : ""; *p; p++)
                switch (*p) {
                case '&':
                        strbuf_append(b, "&amp;");
                        break;
                case '<':
                        strbuf_append(b, "&lt;");
                        break;
                case '>':
                        strbuf_append(b, "&gt;");
                        break;
                case '"':
                        strbuf_append(b, "&quot;");
                        break;
                case '\'':
                        strbuf_append(b, "&#39;");
                        break;
                default: {
                        char c[2] = { *p, 0 };
                        strbuf_append(b, c);
                }
                }
}

static void escf(StrBuf *b, const char *fmt, ...) _printf_(2, 3);
static void escf(StrBuf *b, const char *fmt, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                b->oom = true;
        else
                esc(b, s);
}

static const char *jstring(json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

static double jnum(json_t *o, const char *key) {
        return json_number_value(json_object_get(o, key));
}

/* A verdict as a cell: its word, in its colour. */
static void verdict_cell(StrBuf *b, const char *verdict) {
        const char *v = verdict ? verdict : "";
        strbuf_appendf(b, "<td class=\"%s\">", strncmp(v, "not", 3) == 0 ? "not" : v);
        esc(b, v);
        strbuf_append(b, "</td>");
}

static void row(StrBuf *b, const char *head, const char *value) {
        strbuf_append(b, "<tr><th>");
        esc(b, head);
        strbuf_append(b, "</th><td>");
        esc(b, value ? value : "—");
        strbuf_append(b, "</td></tr>\n");
}

/* ---- charts ---- */

typedef struct Bar {
        int cpu;
        double value;
} Bar;

/* One horizontal bar per CPU, the limit a dashed line: over it, a bar is red. */
static void svg_bars(StrBuf *b, const char *title, const Bar *bars, size_t n, double limit, const char *unit) {
        const int W = 640, L = 64, R = 90, T = 22, H = 18;
        double top = limit;
        for (size_t i = 0; i < n; i++)
                top = MAX(top, bars[i].value);
        top = top > 0 ? top * 1.1 : 1;
        int pw = W - L - R, height = T + (int) n * H + 24;
        strbuf_appendf(b, "<svg width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", W, height);
        strbuf_appendf(b, "<text x=\"%d\" y=\"14\" font-weight=\"bold\">", L);
        esc(b, title);
        strbuf_append(b, "</text>\n");
        for (size_t i = 0; i < n; i++) {
                int y = T + (int) i * H;
                double w = bars[i].value / top * pw;
                strbuf_appendf(b, "<text x=\"4\" y=\"%d\">CPU %d</text>\n", y + 12, bars[i].cpu);
                strbuf_appendf(b, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", L, y + 2,
                               MAX(w, 1.0), H - 5, bars[i].value > limit ? "#c0392b" : "#2e86c1");
                strbuf_appendf(b, "<text x=\"%.1f\" y=\"%d\">%g %s</text>\n", L + MAX(w, 1.0) + 4, y + 12,
                               bars[i].value, unit);
        }
        double x = L + limit / top * pw;
        strbuf_appendf(
                b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/>\n",
                x, T, x, T + (int) n * H);
        strbuf_appendf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#c0392b\">limit %g %s</text>\n", x,
                       T + (int) n * H + 16, limit, unit);
        strbuf_append(b, "</svg>\n");
}

/* A chart of key (a number) of every CPU of the array list, or of 100 - key with invert. */
static void chart(StrBuf *b, const char *title, json_t *list, const char *sub, const char *key, bool invert,
                  double limit, const char *unit) {
        size_t i, n = 0;
        json_t *c;
        _cleanup_free_ Bar *bars = calloc(MAX(json_array_size(list), (size_t) 1), sizeof(Bar));
        if (!bars) {
                b->oom = true;
                return;
        }
        json_array_foreach (list, i, c) {
                json_t *o = sub ? json_object_get(c, sub) : c;
                if (!json_is_object(o))
                        continue;
                double v = jnum(o, key);
                bars[n++] = (Bar) { (int) json_integer_value(json_object_get(c, "cpu")), invert ? 100.0 - v : v };
        }
        if (n > 0)
                svg_bars(b, title, bars, n, limit, unit);
}

/* An SVG made for a file of its own, inline: HTML needs no namespace on it (and a page that
 * names no address is one a reader can see fetches nothing). */
static void inline_svg(StrBuf *b, const char *svg) {
        const char *ns = " xmlns=\"http://www.w3.org/2000/svg\"", *p = strstr(svg, ns);
        if (!p) {
                strbuf_append(b, svg);
                return;
        }
        _cleanup_free_ char *head = strndup(svg, (size_t) (p - svg));
        if (!head) {
                b->oom = true;
                return;
        }
        strbuf_append(b, head);
        strbuf_append(b, p + strlen(ns));
}

/* ---- sections ---- */

static void summary(StrBuf *b, json_t *doc) {
        json_t *host = json_object_get(doc, "host"), *limits = json_object_get(doc, "limits"), *c;
        size_t i;
        strbuf_append(b, "<table>\n");
        row(b, "Host", jstring(host, "hostname"));
        _cleanup_free_ char *kernel = NULL, *cpus = NULL, *window = NULL;
        if (asprintf(&kernel, "%s %s", strempty(jstring(host, "kernel")), strempty(jstring(host, "version"))) < 0 ||
            asprintf(&cpus, "%s (%s)", strempty(jstring(doc, "cpus")), strempty(jstring(doc, "source"))) < 0 ||
            asprintf(&window, "%lld s each (hwlat, audit, latency)",
                     (long long) json_integer_value(json_object_get(doc, "seconds"))) < 0) {
                b->oom = true;
                return;
        }
        row(b, "Kernel", kernel);
        row(b, "CPU", jstring(host, "cpu"));
        row(b, "Machine", json_is_true(json_object_get(host, "virtual")) ? "a virtual machine" : "bare metal");
        row(b, "Profile", jstring(doc, "profile") ?: "none applied");
        row(b, "CPUs checked", cpus);
        row(b, "Window", window);
        row(b, "Limits from", jstring(limits, "from"));
        row(b, "Date", jstring(doc, "date"));
        strbuf_append(
                b,
                "</table>\n<h2>Summary</h2>\n<table>\n"
                "<tr><th>Check</th><th>Measured</th><th>Limit</th><th>Verdict</th><th>Where, or why not</th></tr>\n");
        json_array_foreach (json_object_get(doc, "checks"), i, c) {
                bool measured = !jstring(c, "reason");
                strbuf_append(b, "<tr><td>");
                esc(b, jstring(c, "check"));
                strbuf_append(b, "</td><td class=\"n\">");
                if (measured)
                        escf(b, "%g %s", jnum(c, "value"), strempty(jstring(c, "unit")));
                strbuf_append(b, "</td><td class=\"n\">");
                escf(b, "%g %s", jnum(c, "limit"), strempty(jstring(c, "unit")));
                strbuf_append(b, "</td>");
                verdict_cell(b, jstring(c, "verdict"));
                strbuf_append(b, "<td>");
                if (!measured)
                        esc(b, jstring(c, "reason"));
                else if (json_object_get(c, "cpu"))
                        escf(b, "CPU %lld", (long long) json_integer_value(json_object_get(c, "cpu")));
                strbuf_append(b, "</td></tr>\n");
        }
        strbuf_append(b, "</table>\n");
}

static void hardware(StrBuf *b, json_t *doc) {
        json_t *hw = json_object_get(doc, "hardware"), *hwlat = json_object_get(hw, "hwlat"),
               *smi = json_object_get(hw, "smi"), *s;
        size_t i;
        strbuf_append(b, "<h2 id=\"hardware\">Hardware</h2>\n<p>");
        if (json_is_true(json_object_get(hwlat, "ran"))) {
                _cleanup_free_ char *line = hwlat_summary(hwlat);
                if (!line)
                        b->oom = true;
                escf(b, "%s.", strempty(line));
                strbuf_append(b, "</p>\n");
                chart(b, "hwlat: the largest gap per CPU", json_object_get(hwlat, "cpu"), NULL, "max_us", false,
                      jnum(hwlat, "limit_us"), "µs");
        } else {
                escf(b, "hwlat did not run: %s.", strempty(jstring(hwlat, "reason")));
                strbuf_append(b, "</p>\n");
        }
        strbuf_append(b, "<p>");
        if (json_is_true(json_object_get(smi, "available")))
                escf(b, "SMIs in the window (MSR_SMI_COUNT): %lld.",
                     (long long) json_integer_value(json_object_get(smi, "count")));
        else
                escf(b, "SMI count not available: %s.", strempty(jstring(smi, "reason")));
        strbuf_append(b, "</p>\n<table>\n<tr><th>Setting</th><th>Found</th><th>Verdict</th><th>Fix</th></tr>\n");
        json_array_foreach (json_object_get(hw, "settings"), i, s) {
                strbuf_append(b, "<tr><td>");
                esc(b, jstring(s, "setting"));
                strbuf_append(b, "</td><td>");
                esc(b, jstring(s, "found"));
                strbuf_append(b, "</td>");
                verdict_cell(b, jstring(s, "verdict"));
                strbuf_append(b, "<td>");
                esc(b, jstring(s, "fix"));
                strbuf_append(b, "</td></tr>\n");
        }
        strbuf_append(b, "</table>\n");
}

/* One row of a CPU's audit table. */
static void source_row(StrBuf *b, const char *what, json_t *e) {
        strbuf_append(b, "<tr><td>");
        esc(b, what);
        escf(b, "</td><td class=\"n\">%lld</td><td class=\"n\">%.1f/s</td><td>",
             (long long) json_integer_value(json_object_get(e, "count")), jnum(e, "rate"));
        esc(b, jstring(e, "fix"));
        strbuf_append(b, "</td></tr>\n");
}

static void audit_cpu(StrBuf *b, json_t *c) {
        json_t *e, *tick = json_object_get(c, "tick");
        size_t j;
        char what[160];
        escf(b, "<h3>CPU %lld: ", (long long) json_integer_value(json_object_get(c, "cpu")));
        strbuf_appendf(b, "%s</h3>\n<table>\n<tr><th>Source</th><th>Count</th><th>Rate</th><th>Fix</th></tr>\n",
                       streq_ptr(jstring(c, "verdict"), "quiet") ? "<span class=\"ok\">quiet</span>"
                                                                 : "<span class=\"over\">noisy</span>");
        json_array_foreach (json_object_get(c, "interrupts"), j, e) {
                audit_interrupt_label(e, what, sizeof(what));
                source_row(b, what, e);
        }
        json_array_foreach (json_object_get(c, "softirqs"), j, e) {
                snprintf(what, sizeof(what), "softirq %s", strempty(jstring(e, "kind")));
                source_row(b, what, e);
        }
        if (!json_is_true(json_object_get(tick, "stopped")))
                source_row(b, "the tick (LOC)", tick);
        json_array_foreach (json_object_get(c, "threads"), j, e) {
                snprintf(what, sizeof(what), "%s %s (pid %lld), ran %.1f ms",
                         json_is_true(json_object_get(e, "kernel")) ? "kernel thread" : "task",
                         strempty(jstring(e, "comm")), (long long) json_integer_value(json_object_get(e, "pid")),
                         jnum(e, "cpu_ms"));
                strbuf_append(b, "<tr><td colspan=\"3\">");
                esc(b, what);
                strbuf_append(b, "</td><td>");
                esc(b, jstring(e, "fix"));
                strbuf_append(b, "</td></tr>\n");
        }
        strbuf_append(b, "</table>\n");
}

static void audit(StrBuf *b, json_t *doc) {
        json_t *a = json_object_get(doc, "audit"), *c;
        size_t i;
        strbuf_append(b, "<h2 id=\"audit\">Audit</h2>\n<p>");
        if (!json_is_object(a)) {
                strbuf_append(b, "Not observed.</p>\n");
                return;
        }
        escf(b, "What disturbed CPUs %s over %.1f s: %s.", strempty(jstring(a, "cpus")), jnum(a, "seconds"),
             streq_ptr(jstring(a, "verdict"), "quiet") ? "every CPU quiet" : "noisy");
        if (!json_is_true(json_object_get(json_object_get(a, "osnoise"), "ran")))
                escf(b, " No osnoise figures: %s.", strempty(jstring(json_object_get(a, "osnoise"), "reason")));
        strbuf_append(b, "</p>\n");
        chart(b, "osnoise: the share of each CPU taken by noise", json_object_get(a, "cpu"), "osnoise",
              "available_percent", true, jnum(json_object_get(doc, "limits"), "noise_max_percent"), "%");
        json_array_foreach (json_object_get(a, "cpu"), i, c)
                audit_cpu(b, c);
}

static void latency(StrBuf *b, json_t *doc, const char *svg) {
        json_t *l = json_object_get(doc, "latency"), *c;
        size_t i;
        strbuf_append(b, "<h2 id=\"latency\">Latency</h2>\n<p>");
        if (!json_is_object(l)) {
                json_t *check = NULL, *e;
                json_array_foreach (json_object_get(doc, "checks"), i, e)
                        if (streq_ptr(jstring(e, "check"), "latency"))
                                check = e;
                escf(b, "Not measured: %s.", strempty(jstring(check, "reason")));
                strbuf_append(b, "</p>\n");
                return;
        }
        escf(b, "Wake-up latency measured with %s over %.1f s.", strempty(jstring(l, "tool")), jnum(l, "seconds"));
        strbuf_append(b,
                      "</p>\n<table>\n<tr><th>CPU</th><th>Context</th><th>Samples</th><th>Min µs</th>"
                      "<th>Avg µs</th><th>p99 µs</th><th>Max µs</th></tr>\n");
        json_array_foreach (json_object_get(l, "cpu"), i, c)
                for (unsigned k = 0; k < 2; k++) {
                        json_t *s = json_object_get(c, k ? "thread" : "irq");
                        if (!json_is_object(s))
                                continue;
                        escf(b, "<tr><td>%lld</td><td>%s</td>",
                             (long long) json_integer_value(json_object_get(c, "cpu")), k ? "thread" : "irq");
                        strbuf_appendf(b,
                                       "<td class=\"n\">%lld</td><td class=\"n\">%.1f</td><td class=\"n\">%.1f</td>"
                                       "<td class=\"n\">%lld</td><td class=\"n\">%.1f</td></tr>\n",
                                       (long long) json_integer_value(json_object_get(s, "samples")), jnum(s, "min_us"),
                                       jnum(s, "avg_us"), (long long) json_integer_value(json_object_get(s, "p99_us")),
                                       jnum(s, "max_us"));
                }
        strbuf_append(b, "</table>\n");
        if (svg)
                inline_svg(b, svg);
}

int check_report_html(json_t *doc, const char *latency_svg, char **ret) {
        StrBuf b = {};
        const char *verdict = jstring(doc, "verdict");
        strbuf_append(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
        escf(&b, "rtpart check of %s: %s", strempty(jstring(json_object_get(doc, "host"), "hostname")),
             strempty(verdict));
        strbuf_appendf(&b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", style);
        escf(&b, "rtpart check of %s: ", strempty(jstring(json_object_get(doc, "host"), "hostname")));
        strbuf_appendf(&b, "<span class=\"%s\">", strempty(verdict));
        esc(&b, verdict);
        strbuf_append(&b, "</span></h1>\n");
        summary(&b, doc);
        hardware(&b, doc);
        audit(&b, doc);
        latency(&b, doc, latency_svg);
        strbuf_append(&b, "<footer>");
        escf(&b, "Written by rtpartctl check (rtpart %s) on %s.", PACKAGE_VERSION, strempty(jstring(doc, "date")));
        strbuf_append(&b, "</footer>\n</body>\n</html>\n");
        *ret = strbuf_steal(&b);
        return *ret ? 0 : -ENOMEM;
}
