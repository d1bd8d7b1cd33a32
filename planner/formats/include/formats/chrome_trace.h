#pragma once
// The simulated pipeline schedule of one iteration as a Chrome/Perfetto trace (the "Trace Event
// Format": a JSON object with "traceEvents"; chrome://tracing and ui.perfetto.dev open it).
// One process per pipeline stage (pid = stage), three threads (tid 0 = compute, tid 1 = comm,
// tid 2 = comm (pipeline p2p), kept apart so that events on one thread nest properly),
// "X" (complete) events with ts/dur in microseconds:
//   compute lane:  "F mb3 chunk0", "B mb3 chunk0" (from predict(job, &events)), "R mb3 chunk0"
//                  nested at the start of each backward (selective/full recompute), and the
//                  critical stage's "optimizer step";
//   p2p lane:      "send act mb3 chunk0" / "send grad mb3 chunk0" (pipeline p2p after each
//                  forward/backward that feeds another rank);
//   comm lane:     "TP/CP comm (exposed) F mb3 chunk0"
//                  (the exposed tensor/context-parallel communication serialized inside that op,
//                  drawn as one block at its end: it really alternates with the GEMMs layer by
//                  layer), and the critical stage's exposed "DP grad sync".
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/job.h"
#include "costmodel/pipeline_sim.h"
#include "costmodel/prediction.h"

namespace strata {

nlohmann::json chrome_trace(const Job& job, const Prediction& pred, const std::vector<PipelineEvent>& events);

}  // namespace strata
