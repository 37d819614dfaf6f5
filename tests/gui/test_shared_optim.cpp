// `kiln train` and Kiln Studio build their optimizer and scheduler with the one factory of
// the engine (engine/optim/factory.h). This checks that their two config paths agree: the
// CLI's flags (app/cli/train_config.h) and the Studio's stored settings and panel
// (widgets/training/training_config.h) give the same optimizer type and hyper-parameters
// for every name, the same schedule for every scheduler, and both refuse an unknown name
// (the Studio's own factory used to turn one into RMSprop). --checkpoint-every is read by one
// function (engine/train/checkpoint_every.h) for `kiln train` and kiln-studio --headless.
#include <QComboBox>
#include <QtTest>
#include <nlohmann/json.hpp>
#include <typeinfo>

#include "app/cli/train_config.h"
#include "engine/core/error.h"
#include "engine/optim/factory.h"
#include "engine/train/checkpoint_every.h"
#include "widgets/training/training_config.h"
#include "widgets/training/training_panel.h"

using namespace kiln;

namespace {

cli::TrainConfig cliConfig(const std::vector<std::string>& argv) { return cli::train_config(cli::train_parser().parse(argv)); }

studio::TrainingConfig studioConfig(const nlohmann::json& j) { return studio::TrainingConfig::from_json(j.dump()); }

std::vector<Tensor> params() { return {Tensor::zeros({2}).requires_grad_(true)}; }

bool usesMomentum(const std::string& name) { return name == "sgd" || name == "rmsprop"; }

// Same class and the same lr and hyper-parameters (state_dict's scalars: torch's names).
void compareOptimizers(const optim::OptimizerConfig& a, const optim::OptimizerConfig& b, const std::string& name) {
  auto x = optim::make_optimizer(a, params()), y = optim::make_optimizer(b, params());
  QVERIFY2(typeid(*x) == typeid(*y), name.c_str());
  QVERIFY2(x->state_dict().scalars == y->state_dict().scalars, name.c_str());
  QCOMPARE(x->lr(), y->lr());
}

// The message of the exception f throws ("" when none).
template <class F>
QString thrown(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestSharedOptim : public QObject {
  Q_OBJECT
 private slots:
  void everyOptimizerNameGivesTheSameOptimizer() {
    for (const std::string& name : optim::optimizer_names()) {
      // Defaults: only the name given.
      compareOptimizers(cli::optimizer_config(cliConfig({"--optimizer", name})),
                        studioConfig({{"optimizer", name}}).optimizer_config(), name);
      // Every value set.
      std::vector<std::string> argv{"--optimizer", name, "--lr", "0.02", "--weight-decay", "0.005"};
      nlohmann::json j{{"optimizer", name}, {"lr", 0.02}, {"weight_decay", 0.005}};
      if (usesMomentum(name)) {
        argv.insert(argv.end(), {"--momentum", "0.7"});
        j["momentum"] = 0.7;
      }
      compareOptimizers(cli::optimizer_config(cliConfig(argv)), studioConfig(j).optimizer_config(), name);
    }
  }

  void everySchedulerGivesTheSameSchedule() {
    const int64_t batches = 7;
    for (const std::string& name : optim::scheduler_names()) {
      for (int epochs : {1, 5, 6, 9, 20}) {
        const std::string what = name + ", " + std::to_string(epochs) + " epochs";
        auto o1 = optim::make_optimizer({.lr = 0.01}, params()), o2 = optim::make_optimizer({.lr = 0.01}, params());
        optim::Scheduler a = optim::make_scheduler(
            cli::scheduler_config(cliConfig({"--scheduler", name, "--epochs", std::to_string(epochs), "--lr", "0.01"}),
                                  batches),
            *o1);
        optim::Scheduler b = optim::make_scheduler(
            studioConfig({{"scheduler", name}, {"epochs", epochs}, {"lr", 0.01}}).scheduler_config(batches), *o2);
        QVERIFY2(!a.scheduler == !b.scheduler, what.c_str());
        QCOMPARE(a.per_batch, b.per_batch);
        QCOMPARE(a.per_batch, name == "onecycle");
        if (!a.scheduler) continue;
        QVERIFY2(typeid(*a.scheduler) == typeid(*b.scheduler), what.c_str());
        for (int64_t k = 0; k < epochs * (a.per_batch ? batches : 1); ++k)
          QVERIFY2(a.scheduler->lr_at(k) == b.scheduler->lr_at(k), (what + ", step " + std::to_string(k)).c_str());
      }
    }
  }

  void bothRefuseAnUnknownName() {
    // At the front doors: the CLI's flag parser and the Studio's stored settings.
    const QString cliError = thrown([] { cliConfig({"--optimizer", "lion"}); });
    QVERIFY2(cliError.contains("lion") && cliError.contains("sgd, adam, adamw, rmsprop"), qPrintable(cliError));
    const QString studioError = thrown([] { studioConfig({{"optimizer", "lion"}}); });
    QVERIFY2(studioError.contains("'optimizer'") && studioError.contains("'lion'") &&
                 studioError.contains("sgd, adam, adamw, rmsprop"),
             qPrintable(studioError));
    QVERIFY(!thrown([] { cliConfig({"--scheduler", "plateau"}); }).isEmpty());
    QVERIFY(thrown([] { studioConfig({{"scheduler", "plateau"}}); }).contains("'plateau'"));

    // Past them (a config made in code): the factory itself refuses, for both.
    cli::TrainConfig c;
    c.optimizer = "lion";
    studio::TrainingConfig s;
    s.optimizer = "lion";
    for (const optim::OptimizerConfig& o : {cli::optimizer_config(c), s.optimizer_config()}) {
      bool threw = false;
      try {
        optim::make_optimizer(o, params());
      } catch (const ValueError& e) {
        threw = QString(e.what()).contains("unknown optimizer 'lion'");
      }
      QVERIFY(threw);  // not RMSprop
    }
    c.scheduler = s.scheduler = "plateau";
    auto opt = optim::make_optimizer({}, params());
    QVERIFY(thrown([&] { optim::make_scheduler(cli::scheduler_config(c, 3), *opt); }).contains("'plateau'"));
    QVERIFY(thrown([&] { optim::make_scheduler(s.scheduler_config(3), *opt); }).contains("'plateau'"));
  }

  void checkpointEveryReadsAlike() {
    // `kiln train`'s flag gives what the one parser gives; "0" is at epoch ends only (the CLI
    // used to keep its 10-minute default for it, against its --help).
    for (const std::string text : {"500", "10m", "0.5m", "0", "0m", "1e3"}) {
      const auto e = train::parse_checkpoint_every(text);
      QVERIFY2(e.has_value(), text.c_str());
      const cli::TrainConfig c = cliConfig({"--checkpoint-every", text});
      QVERIFY2(c.checkpoint_every_steps == e->steps && c.checkpoint_every_minutes == e->minutes, text.c_str());
    }
    QCOMPARE(train::parse_checkpoint_every("500")->steps, int64_t(500));
    QCOMPARE(train::parse_checkpoint_every("1e3")->steps, int64_t(1000));
    QCOMPARE(train::parse_checkpoint_every("0.5m")->minutes, 0.5);
    QCOMPARE(train::parse_checkpoint_every("0")->minutes, 0.0);
    QCOMPARE(cliConfig({"--checkpoint-every", "0"}).checkpoint_every_minutes, 0.0);
    QCOMPARE(cliConfig({}).checkpoint_every_minutes, 10.0);  // the default, 10m
    for (const std::string text : {"", "-1", "5x", "1.5", "m", "-1m", " 5", "5 ", "0x10", "inf", "nanm", "2e6m", "1e13"}) {
      QVERIFY2(!train::parse_checkpoint_every(text), text.c_str());
      const QString error = thrown([&] { cliConfig({"--checkpoint-every", text}); });
      QVERIFY2(error == QString::fromStdString("kiln train: " + train::checkpoint_every_problem(text)), qPrintable(error));
    }
    QCOMPARE(QString::fromStdString(train::checkpoint_every_problem("5x")),
             QString("--checkpoint-every expects N (optimizer steps, a whole number) or Nm (minutes), e.g. 500 or 10m; "
                     "0: at epoch ends only; got '5x'"));
  }

  void thePanelOffersEveryName() {
    studio::TrainingPanel panel;
    QComboBox* optimizers = panel.findChildren<QComboBox*>().value(0);  // the first field: Optimizer
    QVERIFY(optimizers);
    for (const std::string& name : optim::optimizer_names())
      for (const std::string& sched : optim::scheduler_names()) {
        studio::TrainingConfig c;
        c.optimizer = name;
        c.scheduler = sched;
        const int before = optimizers->count();
        panel.setConfig(c);
        QCOMPARE(optimizers->count(), before);  // an item the panel had, not one added for an unknown name
        QCOMPARE(QString::fromStdString(panel.config().optimizer), QString::fromStdString(name));
        QCOMPARE(QString::fromStdString(panel.config().scheduler), QString::fromStdString(sched));
      }
    QCOMPARE(optimizers->count(), int(optim::optimizer_names().size()));
    QCOMPARE(optimizers->itemData(0).toString(), QString("adam"));  // the Studio's order: Adam first
  }
};

QTEST_MAIN(TestSharedOptim)
#include "test_shared_optim.moc"
