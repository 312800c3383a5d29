// The training summary record.
#include "local/train_summary.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace ember::local {

using Json = nlohmann::ordered_json;  // keys in the order written

double WaitPerStepMs(const trainer::TrainSummary& summary) {
  double wait = 0;
  for (const auto& w : summary.windows) wait += w.wait_ms * (w.last_step - w.first_step + 1);
  return wait / std::max<uint32_t>(summary.steps, 1);
}

TableStats SumTableStats(const ServerStats& server) {
  TableStats sum;
  for (const TableStats& t : server.tables) {
#define EMBER_SUM_TABLE_STAT(field, ...) sum.field += t.field;
    EMBER_TABLE_STATS(EMBER_SUM_TABLE_STAT)
#undef EMBER_SUM_TABLE_STAT
  }
  return sum;
}

namespace {

// Each server's figures, its tables summed.
Json ServersJson(const std::vector<ServerStats>& servers) {
  Json server_list = Json::array();
  for (const ServerStats& server : servers) {
    const TableStats sum = SumTableStats(server);
    Json entry = {{"id", server.server_id}};
#define EMBER_LOG_TABLE_STAT(field, Name, Type, metric, help, logged) \
  if (logged) entry[#field] = sum.field;
    EMBER_TABLE_STATS(EMBER_LOG_TABLE_STAT)
#undef EMBER_LOG_TABLE_STAT
    entry["keys_pulled"] = server.keys_pulled;
    entry["keys_pushed"] = server.keys_pushed;
    entry["errors"] = server.errors;
    server_list.push_back(std::move(entry));
  }
  return server_list;
}

// The checkpoint cuts the run took.
Json CutsJson(const std::vector<trainer::CutRecord>& records) {
  Json cuts = Json::array();
  for (const trainer::CutRecord& cut : records) {
    cuts.push_back({{"step", cut.step},
                    {"seconds", cut.seconds},
                    {"bytes", cut.bytes},
                    {"chain_place", cut.chain_place}});
  }
  return cuts;
}

// The evaluation: the model's figures on the test split (and validation), beside popularity's.
Json EvalJson(const EvalFigures& eval) {
  const auto split = [](const trainer::RankingFigures& figures) {
    return Json{{"users", figures.cases}, {"hit_rate", figures.hit_rate}, {"ndcg", figures.ndcg}};
  };
  Json out = {{"protocol", eval.protocol}};
  if (eval.test) {
    out.update(Json{{"users", eval.model.cases},
                    {"hit_rate", eval.model.hit_rate},
                    {"ndcg", eval.model.ndcg},
                    {"hit_rate_se", eval.model.hit_rate_se},
                    {"ndcg_se", eval.model.ndcg_se},
                    {"tie_fraction", eval.model.tie_fraction},
                    {"items_recommended", eval.model.items_recommended},
                    {"warm", split(eval.model.warm)},
                    {"cold", split(eval.model.cold)},
                    {"popularity_hit_rate", eval.popularity.hit_rate},
                    {"popularity_ndcg", eval.popularity.ndcg}});
  }
  if (eval.validation) {
    out["validation"] = {{"users", eval.validation->cases},
                         {"hit_rate", eval.validation->hit_rate},
                         {"ndcg", eval.validation->ndcg}};
  }
  return out;
}

// The validation points of early stopping, the best one and what followed it.
Json EarlyStoppingJson(const EarlyStoppingReport& report) {
  const auto point = [](const trainer::ValidationPoint& p) {
    return Json{{"step", p.step}, {"epoch", p.epoch}, {"hit_rate", p.hit_rate},
                {"ndcg", p.ndcg}};
  };
  Json evaluations = Json::array();
  for (const auto& p : report.evaluations) evaluations.push_back(point(p));
  return {{"evaluations", std::move(evaluations)},
          {"best", point(report.best)},
          {"stopped_after_step", report.stopped_after_step},
          {"then", report.then},
          {"final_steps", report.final_steps},
          {"final_epochs", report.final_epochs}};
}

}  // namespace

std::string TrainSummaryJson(const trainer::TrainSummary& s,
                             const std::vector<ServerStats>& servers,
                             const std::optional<EvalFigures>& eval,
                             const std::optional<EarlyStoppingReport>& early_stopping) {
  // NaN and infinities become null (nlohmann::json writes any non-finite number so).
  Json json = {{"steps", s.steps},
               {"samples", s.samples},
               {"seconds", s.seconds},
               {"samples_per_second", s.samples_per_second},
               {"wait_ms_per_step", WaitPerStepMs(s)},
               {"backend", s.backend},
               {"loss_start", s.first_window.loss},
               {"loss_end", s.last_window.loss},
               {"servers", ServersJson(servers)}};
  if (!s.cuts.empty()) json["checkpoints"] = CutsJson(s.cuts);
  if (eval) json["eval"] = EvalJson(*eval);
  if (early_stopping) json["early_stopping"] = EarlyStoppingJson(*early_stopping);
  // Invalid UTF-8 in a string (a table name, say) is replaced rather than thrown about.
  return json.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace ember::local
