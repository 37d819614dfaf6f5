// The project templates embedded in kiln-studio (projects/templates/*.json as Qt
// resources ":/templates/<name>.json") and the settings a new project starts with.
#pragma once
#include <QStringList>
#include <string>

#include "projects/project.h"

namespace kiln::studio {

void initResources();        // registers the embedded resources (call once before use)
QStringList templateNames(); // "fashion_mnist_cnn", ... sorted
// The graph JSON of a template; ValueError "unknown template 'x'; known: ..." otherwise.
std::string templateJson(const QString& name);
// A readable title: "fashion_mnist_cnn" -> "Fashion-MNIST CNN" (the graph's name when set).
QString templateTitle(const QString& name);

// Creates `path` from a template: graph version 1 ("from template <name>") and the
// default dataset and training settings. ProjectError/ValueError as Project::create
// and graph::from_json.
projects::Project createFromTemplate(const std::string& path, const QString& name);

}  // namespace kiln::studio
