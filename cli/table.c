/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

struct table {
        unsigned n_columns;
        size_t n_rows, alloc;
        char **cells;           /* (n_rows + 1) * n_columns, headers first */
        size_t *width;
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
                char *s = strdup(cells[c] ?: "-");
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
        t->width = calloc(n_columns, sizeof(size_t));
        if (!t->width || append(t, headers) < 0) {
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
        free(t);
}

int table_add_row(struct table *t, const char *const *cells) {
        return append(t, cells);
}

void table_print(const struct table *t, FILE *f, unsigned indent) {
        for (size_t r = 0; r < t->n_rows; r++) {
                fprintf(f, "%*s", (int) indent, "");
                for (unsigned c = 0; c < t->n_columns; c++) {
                        const char *s = t->cells[r * t->n_columns + c];

                        if (c + 1 == t->n_columns)
                                fputs(s, f);
                        else
                                fprintf(f, "%-*s  ", (int) t->width[c], s);
                }
                fputc('\n', f);
        }
}
