#!/bin/sh
# scripts/demo scale: the tour on the 'scale' scenario (see test-demo.sh).
SVFF_DEMO_SCENARIO=scale exec sh "$(dirname "$0")/test-demo.sh"
