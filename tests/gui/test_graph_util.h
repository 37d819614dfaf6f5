// Helpers shared by the graph widget tests (test_graph_*.cpp).
#pragma once
#include <QApplication>
#include <QMouseEvent>
#include <QTest>
#include <string>

#include "engine/graph/json.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/graph_document.h"

namespace kiln::studio::testing {

inline std::string json(const GraphDocument& doc) { return graph::to_json(doc.graph()); }

// Input [1, 28, 28] -> Flatten -> Linear(in_features) -> Output, connected, laid out
// top-down 150 units apart. Returns the ids in that order through `ids`.
inline graph::Graph mlp(int64_t in_features, std::vector<graph::NodeId>* ids = nullptr) {
  graph::Graph g;
  g.name = "test mlp";
  const graph::NodeId input = g.add_node("Input", "input");
  const graph::NodeId flatten = g.add_node("Flatten", "flatten");
  const graph::NodeId linear = g.add_node("Linear", "fc", {{"in_features", in_features}, {"out_features", int64_t(10)}});
  const graph::NodeId output = g.add_node("Output", "output");
  const std::vector<graph::NodeId> order{input, flatten, linear, output};
  for (size_t i = 0; i < order.size(); ++i) g.set_position(order[i], 0, 150.0 * double(i));
  for (size_t i = 0; i + 1 < order.size(); ++i) g.connect({order[i], 0}, {order[i + 1], 0});
  if (ids) *ids = order;
  return g;
}

// Sends a mouse event to the view's viewport with the given buttons held (QTest's
// mouseMove does not carry held buttons on every platform plugin).
inline void sendMouse(QGraphicsView* view, QEvent::Type type, QPointF scenePos, Qt::MouseButton button,
                      Qt::MouseButtons held, Qt::KeyboardModifiers mods = Qt::NoModifier) {
  const QPoint local = view->mapFromScene(scenePos);
  const QPointF global = view->viewport()->mapToGlobal(local);
  QMouseEvent event(type, QPointF(local), global, button, held, mods);
  QApplication::sendEvent(view->viewport(), &event);
}

// A left-button drag from one scene point to another in a few steps.
inline void drag(QGraphicsView* view, QPointF from, QPointF to, int steps = 4) {
  QTest::mousePress(view->viewport(), Qt::LeftButton, Qt::NoModifier, view->mapFromScene(from));
  for (int i = 1; i <= steps; ++i) {
    const QPointF p = from + (to - from) * (double(i) / steps);
    sendMouse(view, QEvent::MouseMove, p, Qt::NoButton, Qt::LeftButton);
  }
  QTest::mouseRelease(view->viewport(), Qt::LeftButton, Qt::NoModifier, view->mapFromScene(to));
}

}  // namespace kiln::studio::testing
