/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* status's drift: a summary per PF, one line per kind with a count and
 * one next step per PF, or (verbose) every drift svffd reported. */

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>

/* Prints the Drift array of a Status reply (borrowed; NULL or empty:
 * "none"). */
void drift_print(FILE *f, struct json_object *drift, bool verbose);
