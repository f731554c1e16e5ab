-- hawser: request mirrors (Gateway API HTTPRoute RequestMirror) for HAProxy.
--
-- Loaded only when a rule mirrors:  lua-load lua/mirror.lua <address>
-- where <address> is the internal `hawser_mirror` frontend (unix@<path>).
--
--   http-request lua.hawser_mirror <backend>
--
-- copies the request as it stands (method, path and query, headers, and the
-- body when all of it is already buffered) and hands the copy to a task of
-- its own, which sends it through HAProxy's HTTP client to the internal
-- frontend; that frontend sends it to <backend> and drops the answer. The
-- action never waits and never fails the request: a copy that cannot be
-- made or sent is dropped, and so is one made while too many are in flight.

local address = ...
if type(address) ~= "string" or address == "" then
  error("mirror.lua needs the internal frontend's address as its argument")
end

-- Copies in flight at most; later ones are dropped until some finish.
local MAX_IN_FLIGHT = 256
-- How long a copy may take (HAProxy's `timeout server` for it), in ms.
local TIMEOUT_MS = 30000
-- The HTTP client sends only these methods; others go as POST with the
-- real one in METHOD_HEADER, which the internal frontend restores.
local CLIENT_METHODS = { GET = "get", HEAD = "head", PUT = "put", POST = "post", DELETE = "delete" }
local BACKEND_HEADER = "x-hawser-mirror"
local METHOD_HEADER = "x-hawser-mirror-method"
-- Hop-by-hop headers, and the framing the HTTP client sets itself.
local SKIPPED = {
  ["connection"] = true, ["keep-alive"] = true, ["proxy-connection"] = true,
  ["transfer-encoding"] = true, ["te"] = true, ["trailer"] = true, ["upgrade"] = true,
  ["expect"] = true, ["content-length"] = true,
  [BACKEND_HEADER] = true, [METHOD_HEADER] = true,
}

local in_flight = 0

-- The body to copy: "" when the request has none, nil when it cannot be
-- copied whole (its length is not announced, or not all of it has arrived:
-- the action never waits for a body).
local function body_of(txn, headers)
  local buffered = txn.f:req_body() or ""
  local length = headers["content-length"]
  if length then
    if tonumber(length[0]) == #buffered then
      return buffered
    end
    return nil
  end
  if headers["transfer-encoding"] or #buffered > 0 then
    return nil
  end
  return ""
end

-- Header values as the HTTP client takes them: name -> { values }.
local function copy_headers(headers)
  local copy = {}
  for name, values in pairs(headers) do
    if not SKIPPED[name] then
      local list = {}
      for i = 0, #values do
        list[#list + 1] = values[i]
      end
      copy[name] = list
    end
  end
  return copy
end

local function send(copy)
  local ok, err = pcall(function()
    local client = core.httpclient()
    local send_as = CLIENT_METHODS[copy.method]
    if not send_as then
      send_as = "post"
      copy.headers[METHOD_HEADER] = { copy.method }
    end
    client[send_as](client, {
      url = "http://hawser-mirror" .. copy.pathq,
      dst = address,
      headers = copy.headers,
      body = copy.body,
      timeout = TIMEOUT_MS,
    })
  end)
  in_flight = in_flight - 1
  if not ok then
    core.Warning("hawser mirror to " .. copy.backend .. " failed: " .. tostring(err))
  end
end

core.register_action("hawser_mirror", { "http-req" }, function(txn, backend)
  if in_flight >= MAX_IN_FLIGHT then
    return
  end
  local method = txn.f:method()
  if method == "CONNECT" then
    return
  end
  local given = txn.http:req_get_headers()
  local body = body_of(txn, given)
  if body == nil then
    return
  end
  local headers = copy_headers(given)
  headers[BACKEND_HEADER] = { backend }
  -- What `option forwardfor` adds on the way to a backend; the copy reaches
  -- its backend from a unix socket, which adds nothing.
  local client = txn.f:src()
  if client then
    local forwarded = headers["x-forwarded-for"]
    if forwarded then
      forwarded[#forwarded + 1] = client
    else
      headers["x-forwarded-for"] = { client }
    end
  end
  local copy = {
    backend = backend,
    method = method,
    pathq = txn.f:pathq() or "/",
    headers = headers,
    body = body ~= "" and body or nil,
  }
  in_flight = in_flight + 1
  if not pcall(core.register_task, send, copy) then
    in_flight = in_flight - 1
  end
end, 1)
