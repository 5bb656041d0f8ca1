/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "table.h"
#include "utf8.h"

struct table {
        unsigned n_columns;
        size_t n_rows, alloc;
        char **cells;           /* (n_rows + 1) * n_columns, headers first */
        size_t *width;
        unsigned *rank;
        unsigned gap;
};

static int append(struct table *t, const char *const *cells) {
        if (t->n_rows + 1 >= t->alloc) {
                size_t a = t->alloc ? t->alloc * 2 : 16;
                char **n = realloc(t->cells, a * t->n_columns * sizeof(char *));

                if (!n)
                        return -ENOMEM;
                t->cells = n;
                t->alloc = a;
        }
        for (unsigned c = 0; c < t->n_columns; c++) {
                /* one line per row, whatever the cell holds */
                char *s = svff_utf8_escape(cells[c] ?: "-", false);
                size_t w;

                if (!s)
                        return -ENOMEM;
                t->cells[t->n_rows * t->n_columns + c] = s;
                w = strlen(s);
                if (w > t->width[c])
                        t->width[c] = w;
        }
        t->n_rows++;
        return 0;
}

struct table *table_new(unsigned n_columns, const char *const *headers) {
        struct table *t = calloc(1, sizeof(*t));

        if (!t)
                return NULL;
        t->n_columns = n_columns;
        t->gap = 2;
        t->width = calloc(n_columns, sizeof(size_t));
        t->rank = calloc(n_columns, sizeof(unsigned));
        if (!t->width || !t->rank || append(t, headers) < 0) {
                table_free(t);
                return NULL;
        }
        return t;
}

void table_free(struct table *t) {
        if (!t)
                return;
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t->width);
        free(t->rank);
        free(t);
}

int table_add_row(struct table *t, const char *const *cells) {
        return append(t, cells);
}

void table_set_gap(struct table *t, unsigned gap) {
        t->gap = gap;
}

void table_set_shrink_rank(struct table *t, unsigned c, unsigned rank) {
        if (c < t->n_columns)
                t->rank[c] = rank;
}

void table_print_fit(const struct table *t, FILE *f, unsigned indent, unsigned max_width) {
        _cleanup_free_ size_t *w = calloc(t->n_columns, sizeof(size_t));
        size_t total = indent;

        if (!w)
                return;
        for (unsigned c = 0; c < t->n_columns; c++) {
                w[c] = t->width[c];
                total += w[c] + (c > 0 ? t->gap : 0);
        }
        /* Cut the shrinkable columns, the least useful (lowest rank)
         * first and among equals from the right, each down to its header
         * (and never below 4: "a..." still says something). */
        for (unsigned rank = 1, next; max_width > 0 && total > max_width && rank > 0; rank = next) {
                next = 0;
                for (unsigned c = t->n_columns; total > max_width && c-- > 0;) {
                        size_t min = strlen(t->cells[c]), cut;

                        if (t->rank[c] > rank && (next == 0 || t->rank[c] < next))
                                next = t->rank[c];
                        if (t->rank[c] != rank)
                                continue;
                        if (min < 4)
                                min = 4;
                        if (w[c] <= min)
                                continue;
                        cut = MIN(w[c] - min, total - max_width);
                        w[c] -= cut;
                        total -= cut;
                }
        }

        for (size_t r = 0; r < t->n_rows; r++) {
                fprintf(f, "%*s", (int) indent, "");
                for (unsigned c = 0; c < t->n_columns; c++) {
                        const char *s = t->cells[r * t->n_columns + c];
                        size_t len = strlen(s);
                        bool last = c + 1 == t->n_columns;

                        if (len > w[c])
                                fprintf(f, "%.*s...", (int) (w[c] - 3), s);
                        else if (last)
                                fputs(s, f);
                        else
                                fprintf(f, "%-*s", (int) w[c], s);
                        if (!last)
                                fprintf(f, "%*s", (int) t->gap, "");
                }
                fputc('\n', f);
        }
}

void table_print(const struct table *t, FILE *f, unsigned indent) {
        table_print_fit(t, f, indent, 0);
}
