// FP8 Lab tests — a run's datasets checked against the session layout's table
// (core/session/session_layout.h): every path a writer stored matches a pattern, with the units
// and element type the table gives ("varies": units the writer states per dataset).
#pragma once

#include "session/session.h"
#include "session/session_layout.h"

#include <QtTest>

#include <string>

namespace fp8lab::testsupport {

inline void checkDatasetsAgainstLayout(const Run& run) {
  for (const auto& [path, d] : run.datasets) {
    const layout::PathPattern* pat = layout::match(path);
    QVERIFY2(pat, path.c_str());
    if (std::string(pat->units) != "varies")
      QCOMPARE(attrString(d.attrs, "units").value_or("?"), std::string(pat->units));
    QCOMPARE(std::string(toString(d.dtype)), std::string(pat->dtype));
  }
}

} // namespace fp8lab::testsupport
