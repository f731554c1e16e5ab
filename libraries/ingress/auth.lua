-- hawser: external authentication (hawser.dev/auth-url) for HAProxy.
--
-- Loaded only when an Ingress asks for it:  lua-load lua/auth.lua <address>
-- where <address> is the internal `hawser_auth` frontend (unix@<path>).
--
--   http-request lua.hawser_auth
--
-- reads what the feature lines looked up for the request's feature set:
--   txn.auth_backend  the backend the auth service is reached through
--   txn.auth_target   <host>[:<port>]<path>[?<query>] of the auth URL
--   txn.auth_signin   where an answer 401 sends the client (optional)
--   txn.auth_headers  answer headers copied onto the request (optional,
--                     comma-separated, lowercase)
-- sends the auth service a GET carrying the request's headers and what it
-- was (X-Original-URL, X-Original-Method, X-Forwarded-*), as oauth2-proxy
-- and ingress-nginx's auth_request expect, waits for the answer, and sets
--   txn.auth_result     allowed | signin | denied | forbidden | failed | unreachable
--   txn.auth_location   for signin: auth_signin with rd=<the original URL>
--   txn.auth_challenge  for denied: the answer's WWW-Authenticate, if any
-- The feature lines act on the result; anything but `allowed` (a Lua error
-- included) never reaches the backend.
--
-- The internal frontend marks the answers a server gave (ANSWERED_HEADER);
-- an answer without the mark is HAProxy's own (no server, a timeout), so the
-- auth service is unreachable.

local address = ...
if type(address) ~= "string" or address == "" then
  error("auth.lua needs the internal frontend's address as its argument")
end

-- How long the auth service may take to answer, in ms.
local TIMEOUT_MS = 10000
local BACKEND_HEADER = "x-hawser-auth-backend"
local ANSWERED_HEADER = "x-hawser-auth-answered"
-- Hop-by-hop headers, the request's framing (the sub-request has no body),
-- the Host (the auth URL's goes instead) and the internal ones.
local SKIPPED = {
  ["connection"] = true, ["keep-alive"] = true, ["proxy-connection"] = true,
  ["transfer-encoding"] = true, ["te"] = true, ["trailer"] = true, ["upgrade"] = true,
  ["expect"] = true, ["content-length"] = true, ["host"] = true,
  [BACKEND_HEADER] = true, [ANSWERED_HEADER] = true,
}

-- Percent-encodes everything but RFC 3986's unreserved characters.
local function escape(text)
  return (text:gsub("[^%w%-%._~]", function(c)
    return string.format("%%%02X", string.byte(c))
  end))
end

local function names_of(list)
  local names = {}
  for name in string.gmatch(list or "", "[^,%s]+") do
    names[#names + 1] = name
  end
  return names
end

-- The first value of a header in an answer of HAProxy's HTTP client.
local function first(values)
  if type(values) ~= "table" then
    return nil
  end
  if values[0] ~= nil then
    return values[0]
  end
  return values[1]
end

-- The request's headers as the HTTP client takes them: name -> { values }.
local function forwarded_headers(txn)
  local headers = {}
  for name, values in pairs(txn.http:req_get_headers()) do
    if not SKIPPED[name] then
      local list = {}
      for i = 0, #values do
        list[#list + 1] = values[i]
      end
      headers[name] = list
    end
  end
  return headers
end

local function ask(txn, backend, target)
  -- ssl_fc is a boolean sample: Lua gets 0 or 1 (0 is true in Lua).
  local tls = txn.f:ssl_fc()
  local scheme = (tls == true or tls == 1) and "https" or "http"
  local host = txn.f:req_hdr("host") or ""
  local uri = txn.f:pathq() or "/"
  local method = txn.f:method() or "GET"
  local original = scheme .. "://" .. host .. uri
  local headers = forwarded_headers(txn)
  headers["x-original-url"] = { original }
  headers["x-original-uri"] = { uri }
  headers["x-original-method"] = { method }
  headers["x-forwarded-host"] = { host }
  headers["x-forwarded-proto"] = { scheme }
  headers["x-forwarded-uri"] = { uri }
  headers["x-forwarded-method"] = { method }
  headers["x-auth-request-redirect"] = { uri }
  local client = txn.f:src()
  if client then
    headers["x-real-ip"] = { client }
    local forwarded = headers["x-forwarded-for"]
    if forwarded then
      forwarded[#forwarded + 1] = client
    else
      headers["x-forwarded-for"] = { client }
    end
  end
  headers[BACKEND_HEADER] = { backend }
  local ok, answer = pcall(function()
    return core.httpclient():get({
      url = "http://" .. target,
      dst = address,
      headers = headers,
      timeout = TIMEOUT_MS,
    })
  end)
  if not ok then
    core.Warning("hawser auth through " .. backend .. " failed: " .. tostring(answer))
    return nil, original
  end
  return answer, original
end

core.register_action("hawser_auth", { "http-req" }, function(txn)
  local backend = txn:get_var("txn.auth_backend")
  local target = txn:get_var("txn.auth_target")
  if not backend or not target then
    txn:set_var("txn.auth_result", "failed")
    return
  end
  local copied = names_of(txn:get_var("txn.auth_headers"))
  -- What the auth service may say is never taken from the client.
  for _, name in ipairs(copied) do
    txn.http:req_del_header(name)
  end
  local answer, original = ask(txn, backend, target)
  local answered = answer and type(answer.headers) == "table" and answer.headers[ANSWERED_HEADER]
  local status = answered and tonumber(answer.status)
  if not status then
    txn:set_var("txn.auth_result", "unreachable")
  elseif status >= 200 and status < 300 then
    for _, name in ipairs(copied) do
      local values = answer.headers[name]
      if type(values) == "table" then
        for _, value in pairs(values) do
          txn.http:req_add_header(name, value)
        end
      end
    end
    txn:set_var("txn.auth_result", "allowed")
  elseif status == 401 then
    local signin = txn:get_var("txn.auth_signin")
    if signin then
      local join = signin:find("?", 1, true) and "&" or "?"
      txn:set_var("txn.auth_location", signin .. join .. "rd=" .. escape(original))
      txn:set_var("txn.auth_result", "signin")
    else
      local challenge = first(answer.headers["www-authenticate"])
      if challenge then
        txn:set_var("txn.auth_challenge", challenge)
      end
      txn:set_var("txn.auth_result", "denied")
    end
  elseif status == 403 then
    txn:set_var("txn.auth_result", "forbidden")
  else
    txn:set_var("txn.auth_result", "failed")
  end
end, 0)
