#!/bin/sh
# scripts/demo nic: the tour on the 'nic' scenario (see test-demo.sh).
SVFF_DEMO_SCENARIO=nic exec sh "$(dirname "$0")/test-demo.sh"
