-- wrk script: POST request bodies read from the file $WRK_BODY, one JSON body per line, each
-- thread cycling through them (so requests carry different texts); at the end one RESULT line
-- with the counts wrk keeps, so that lost requests (non-2xx answers, socket errors) are reported.
local path = os.getenv("WRK_BODY")
local file = assert(io.open(path, "rb"), "WRK_BODY must name a file of request bodies, one per line")
local bodies = {}
for line in file:lines() do if #line > 0 then bodies[#bodies + 1] = line end end
file:close()
assert(#bodies > 0, "no request body in " .. path)
local headers = {["Content-Type"] = "application/json"}
if os.getenv("WRK_API_KEY") then headers["Authorization"] = "Bearer " .. os.getenv("WRK_API_KEY") end
local counter = 0

function setup(thread)
    counter = counter + 1
    thread:set("offset", counter * 7919)
end

function request()
    offset = (offset or 0) + 1
    return wrk.format("POST", nil, headers, bodies[offset % #bodies + 1])
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("RESULT requests=%d seconds=%.3f p50_ms=%.2f p99_ms=%.2f non2xx=%d connect=%d read=%d write=%d timeout=%d\n",
        summary.requests, summary.duration / 1e6, latency:percentile(50) / 1e3, latency:percentile(99) / 1e3,
        e.status, e.connect, e.read, e.write, e.timeout))
end
