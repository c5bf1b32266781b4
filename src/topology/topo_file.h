// Topology files (JSON; schema in docs/topology.md). WEFT_TOPO_FILE loads a
// file instead of detecting; WEFT_TOPO_DUMP_FILE writes what was detected or
// loaded. A file may describe one host or a cluster with network switches.
#pragma once

#include <string>

#include "src/topology/graph.h"

namespace weft::topo {

inline constexpr int kTopoFileVersion = 1;

std::string dumpString(const System& sys);
System loadString(const std::string& text);

// Errors (unreadable file, bad content) throw weft::Error naming the path.
// dumpFile writes atomically (temporary file, then rename); a non-empty
// comment becomes the file's "comment" member (ignored when loading).
void dumpFile(const System& sys, const std::string& path, const std::string& comment = "");
System loadFile(const std::string& path);

}  // namespace weft::topo
