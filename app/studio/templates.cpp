#include "app/studio/templates.h"

#include <QDir>
#include <QFile>

#include "engine/graph/json.h"
#include "widgets/project/dataset_settings.h"
#include "widgets/training/training_config.h"

static void kilnInitStudioResources() { Q_INIT_RESOURCE(studio); }

namespace kiln::studio {

void initResources() {
  static bool done = false;
  if (!done) kilnInitStudioResources();
  done = true;
}

QStringList templateNames() {
  initResources();
  QStringList names;
  for (const QString& f : QDir(":/templates").entryList({"*.json"}, QDir::Files, QDir::Name)) names << f.chopped(5);
  return names;
}

std::string templateJson(const QString& name) {
  initResources();
  QFile f(":/templates/" + name + ".json");
  if (!f.open(QIODevice::ReadOnly))
    throw ValueError("unknown template '" + name.toStdString() + "'; known: " + templateNames().join(", ").toStdString());
  return f.readAll().toStdString();
}

QString templateTitle(const QString& name) {
  try {
    graph::Graph g = graph::from_json(templateJson(name));
    if (!g.name.empty()) return QString::fromStdString(g.name);
  } catch (const std::exception&) {
  }
  return name;
}

projects::Project createFromTemplate(const std::string& path, const QString& name) {
  const std::string json = templateJson(name);
  graph::Graph g = graph::from_json(json);  // validates before a file is made
  projects::Project p = projects::Project::create(path);
  p.save_graph(graph::to_json(g, &p.blobs()), "from template " + name.toStdString());
  p.set_setting("training", TrainingConfig{}.to_json());
  p.set_setting("dataset", DatasetSettings{}.to_json());
  return p;
}

}  // namespace kiln::studio
