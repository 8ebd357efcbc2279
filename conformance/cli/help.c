/* help.c — help texts with their name lists filled from the registry of the choices
 * (fp8kv/choices.h): a help text says {formats}, {kernel_models:or}, {default_profile} ... where
 * it lists names or a default, and fp8kv_cli_print_help prints it with each of them taken from
 * the registry at run time, so no help text restates a table. {<choice>s} or {<choice>s:style}
 * lists the names of the choice called <choice> ("formats": choice "format", "mx_rules":
 * "mx_rule"), {default_<choice>} names its default ("default_format"). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fp8kv/choices.h"

#define MAX_NAMES 64

/* choice_of: the choice called the len bytes at p with suffix (its last bytes) cut off, NULL
 * for none (or when they do not end in suffix). */
static const struct fp8kv_choice *choice_of(const char *p, size_t len, const char *suffix)
{
    char name[64];
    const size_t cut = strlen(suffix);
    if (len < cut || len - cut >= sizeof name || strncmp(p + len - cut, suffix, cut) != 0)
        return NULL;
    memcpy(name, p, len - cut);
    name[len - cut] = '\0';
    return fp8kv_choice_named(name);
}

/* ---- expansion ------------------------------------------------------------------------------- */

/* The styles of {list:style}: how the names are joined, whether the default is marked
 * (" (default)" after it, "; default" inside its note's parentheses) and whether each name's
 * note follows it in parentheses. */
static const struct {
    const char *style, *sep, *last_sep;
    int mark_default, notes;
} styles[] = {
    {"", "|", NULL, 0, 0},
    {"bar", " | ", NULL, 0, 0},
    {"comma", ", ", NULL, 0, 0},
    {"or", ", ", " or ", 0, 0},
    {"or_default", ", ", " or ", 1, 0},
    {"comma_default", ", ", NULL, 1, 0},
    {"notes", ", ", " or ", 0, 1},
    {"notes_default", ", ", " or ", 1, 1},
};

/* expand: the text of placeholder p (len bytes, the braces excluded) into buf; 0, or -1 when it
 * is none (then it is printed as it stands, which t_names catches). */
static int expand(const char *p, size_t len, char *buf, size_t size)
{
    static const char prefix[] = "default_";
    const size_t prefix_len = sizeof prefix - 1;
    if (len > prefix_len && strncmp(p, prefix, prefix_len) == 0) {
        const char *def = fp8kv_choice_default(choice_of(p + prefix_len, len - prefix_len, ""));
        if (!def)
            return -1;
        snprintf(buf, size, "%s", def);
        return 0;
    }
    const char *colon = memchr(p, ':', len);
    const size_t name_len = colon ? (size_t)(colon - p) : len;
    const char *style = colon ? colon + 1 : p + len;
    const size_t style_len = colon ? len - name_len - 1 : 0;
    const struct fp8kv_choice *c = choice_of(p, name_len, "s");
    int s = -1;
    for (int i = 0; i < (int)(sizeof styles / sizeof styles[0]); i++)
        if (strlen(styles[i].style) == style_len && strncmp(styles[i].style, style, style_len) == 0)
            s = i;
    if (!c || s < 0 || (styles[s].notes && !fp8kv_choice_has_notes(c)))
        return -1;
    const char *names[MAX_NAMES];
    int n = 0;
    while (n < MAX_NAMES && (names[n] = fp8kv_choice_name_at(c, n)))
        n++;
    const char *def = fp8kv_choice_default(c);
    char items[MAX_NAMES][96];
    const char *shown[MAX_NAMES];
    for (int i = 0; i < n; i++) {
        const char *note = styles[s].notes ? fp8kv_choice_note(c, names[i]) : NULL;
        const int is_default = styles[s].mark_default && def && strcmp(def, names[i]) == 0;
        snprintf(items[i], sizeof items[i], "%s%s%s%s%s%s", names[i],
                 note || is_default ? " (" : "", note ? note : "", note && is_default ? "; " : "",
                 is_default ? "default" : "", note || is_default ? ")" : "");
        shown[i] = items[i];
    }
    fp8kv_names_list(shown, n, styles[s].sep, styles[s].last_sep, buf, size);
    return 0;
}

void fp8kv_cli_print_help(const char *text, FILE *out)
{
    for (const char *t = text; *t;) {
        const char *open = strchr(t, '{');
        const char *close = open ? strchr(open, '}') : NULL;
        if (!close) {
            fputs(t, out);
            return;
        }
        fwrite(t, 1, (size_t)(open - t), out);
        char buf[1024];
        if (expand(open + 1, (size_t)(close - open - 1), buf, sizeof buf) == 0)
            fputs(buf, out);
        else
            fwrite(open, 1, (size_t)(close + 1 - open), out);
        t = close + 1;
    }
}
