#include "widgets/graph/onnx_attribute_rows.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringList>
#include <cmath>

#include "widgets/graph/graph_document.h"

namespace kiln::studio {

namespace {

QString number(const QJsonValue& v) {
  const double d = v.toDouble();
  return d == double(qint64(d)) && std::abs(d) < 9e15 ? QString::number(qint64(d)) : QString::number(d, 'g', 8);
}

QString list(const QJsonArray& a, int limit = -1) {
  QStringList parts;
  for (const QJsonValue& v : a) {
    if (limit >= 0 && parts.size() == limit) {
      parts << QStringLiteral("…");
      break;
    }
    parts << (v.isString() ? v.toString() : number(v));
  }
  return parts.join(", ");
}

// {"dtype": "int64", "shape": [2], "data": [1, 2]} -> "int64[2]: 1, 2"
QString tensor(const QJsonObject& t) {
  const QJsonArray data = t.value("data").toArray();
  QString text = QStringLiteral("%1[%2]").arg(t.value("dtype").toString(), list(t.value("shape").toArray()));
  if (!data.isEmpty() && data.size() <= 8) text += ": " + list(data);
  return text;
}

QString value(const QJsonObject& v) {
  if (v.contains("int") || v.contains("float")) return number(v.contains("int") ? v.value("int") : v.value("float"));
  if (v.contains("string")) return v.value("string").toString();
  for (const char* key : {"ints", "floats", "strings"})
    if (v.contains(key)) return list(v.value(key).toArray(), 32);
  if (v.contains("tensor")) return tensor(v.value("tensor").toObject());
  return QObject::tr("(no value)");
}

}  // namespace

bool isOnnxFallback(const graph::Node& n) { return n.op.starts_with("onnx.") && n.op != "onnx.Initializer"; }

bool isOnnxBookkeeping(const std::string& a) {
  return a == "onnx_attributes" || a == "onnx_names" || a == "onnx_types" || a == "onnx_input_slots" ||
         a == "onnx_outputs" || a == "opset";
}

QList<QPair<QString, QString>> onnxAttributeRows(const graph::Node& n) {
  QList<QPair<QString, QString>> rows;
  auto text = [&](const char* name) {
    auto it = n.attrs.find(name);
    return it != n.attrs.end() && std::holds_alternative<std::string>(it->second)
               ? toQString(std::get<std::string>(it->second)) : QString();
  };
  const QJsonObject names = QJsonDocument::fromJson(text("onnx_names").toUtf8()).object();
  if (names.contains("node")) rows.append({QObject::tr("ONNX node"), names.value("node").toString()});
  if (auto it = n.attrs.find("opset"); it != n.attrs.end() && std::holds_alternative<int64_t>(it->second))
    rows.append({QObject::tr("opset"), QString::number(std::get<int64_t>(it->second))});
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(text("onnx_attributes").toUtf8(), &error);
  if (error.error != QJsonParseError::NoError || !doc.isObject()) {
    rows.append({QStringLiteral("onnx_attributes"), QObject::tr("not readable: %1").arg(error.errorString())});
    return rows;
  }
  const QJsonObject attrs = doc.object();
  for (auto it = attrs.begin(); it != attrs.end(); ++it) rows.append({it.key(), value(it.value().toObject())});
  return rows;
}

}  // namespace kiln::studio
