// A counter reducer plugin written in plain C against actomaton_plugin.h, to show the
// plugin contract is language-neutral. Its only export is the entry symbol.
#ifndef ACTOMATON_COUNTER_PLUGIN_H
#define ACTOMATON_COUNTER_PLUGIN_H
#include "actomaton_plugin.h"

ACTOMATON_PLUGIN_EXPORT const actomaton_manifest *actomaton_plugin_entry(uint32_t host_abi_version);

#endif
