// QCustomPlot 2.1's header uses the `signals`, `slots`, `emit` and `foreach` keywords, which this
// project switches off (QT_NO_KEYWORDS). Include it through this header only.
#pragma once

#ifdef QT_NO_KEYWORDS
#define signals Q_SIGNALS
#define slots Q_SLOTS
#define emit Q_EMIT
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef signals
#undef slots
#undef emit
#undef foreach
#else
#include <qcustomplot.h>
#endif
