// Plugins the host's tests load: broken manifests, and a probe of the host functions.
// None exports `actomaton_plugin_entry`; tests name the entry symbol to use.
#ifndef ACTOMATON_HOST_TEST_FIXTURES_H
#define ACTOMATON_HOST_TEST_FIXTURES_H
#include "actomaton_plugin.h"
#endif
