#!/bin/sh
# scripts/demo nvme: the tour on the 'nvme' scenario (see test-demo.sh).
SVFF_DEMO_SCENARIO=nvme exec sh "$(dirname "$0")/test-demo.sh"
