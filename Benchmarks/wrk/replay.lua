-- Replays pre-signed ingest requests (Benchmarks/wrk/make-events.py writes them), each once,
-- in the file's order, so every request carries an event id the server has not seen.
--
--   wrk -t1 -c32 -d8s -s Benchmarks/wrk/replay.lua http://127.0.0.1:PORT -- REQUESTS_FILE
--
-- init() reads the file and builds every request with wrk.format before the timed window
-- (wrk calls it before starting its thread and its clock). If the file runs out, the thread
-- stops rather than send an id twice (a repeat would be answered as a cheap duplicate), and
-- done() says so: the figure of that run is then too low, and the file must be larger.
--
-- done() prints one line for scripts/bench: "replay key=value ...", with the window's
-- length, the requests completed, the non-2xx answers, socket errors, latency percentiles
-- (µs), and the client's own CPU seconds during the window (os.clock() is this process's
-- CPU time; the reading at the end of init() leaves out the building of the requests).
-- Use one thread (-t1): the counters below are per thread.

local requests = {}
local next_index = 0
local threads = {}

-- Globals, so that done() (in wrk's main Lua state) can read them with thread:get.
prepared = 0
ran_out = false
cpu_after_init = 0

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   local path = args[1]
   for line in io.lines(path) do
      local id, timestamp, signature, body = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)\t(.+)$")
      if not id then error("replay.lua: a line of " .. path .. " is not id, timestamp, signature and body") end
      prepared = prepared + 1
      requests[prepared] = wrk.format("POST", "/v1/events", {
         ["Content-Type"] = "application/json",
         ["webhook-id"] = id,
         ["webhook-timestamp"] = timestamp,
         ["webhook-signature"] = signature,
      }, body)
   end
   if prepared == 0 then error("replay.lua: " .. path .. " holds no request") end
   cpu_after_init = os.clock()
end

function request()
   next_index = next_index + 1
   if next_index > prepared then
      -- Out of fresh ids: stop, and send something that cannot be taken for an event.
      ran_out = true
      wrk.thread:stop()
      return wrk.format("GET", "/replay-ran-out")
   end
   return requests[next_index]
end

function done(summary, latency, _)
   local thread = threads[1]
   local errors = summary.errors
   io.write(string.format(
      "replay duration_us=%d requests=%d non2xx=%d socket_errors=%d p50_us=%d p99_us=%d mean_us=%.0f client_cpu_s=%.4f ran_out=%s prepared=%d\n",
      summary.duration, summary.requests, errors.status,
      errors.connect + errors.read + errors.write + errors.timeout,
      latency:percentile(50), latency:percentile(99), latency.mean,
      os.clock() - thread:get("cpu_after_init"), tostring(thread:get("ran_out")), thread:get("prepared")))
end
