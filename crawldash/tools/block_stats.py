"""A block's propagation statistics, computed inside Redis from its ``binv:<hash>``
sorted set by a short script: sending ten thousand members and their scores to Python
would cost more than the pass may take, and the scores come out of Redis sorted, so the
percentiles are read by rank."""

from __future__ import annotations

from collections.abc import Callable

import redis

from ..crawl.address import AddressError
from ..crawl.propagation import HEAD_SIZE, Block, bitnodes_member

Say = Callable[..., None]  # (what, message, *args): logged once per ``what``

# Delay statistics over one binv: key, in Redis: the key is sorted by score, so the
# percentiles are read by rank (linear interpolation between the two nearest ranks).
# Members that are not ADDRESS-PORT are left out and counted; numbers are returned as
# text, as Redis would truncate Lua numbers to integers.
STATS_SCRIPT = """
local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local delays, head, bad, example = {}, {}, 0, ''
local first = nil
for i = 1, #all, 2 do
  local member = all[i]
  if string.match(member, '^[%w%.:]+%-%d+$') then
    local score = tonumber(all[i + 1])
    if first == nil then first = score end
    delays[#delays + 1] = score - first
    if #head < 2 * tonumber(ARGV[1]) then
      head[#head + 1] = member
      head[#head + 1] = all[i + 1]
    end
  else
    bad = bad + 1
    example = member
  end
end
local n = #delays
if n == 0 then return {'0', tostring(bad), example} end
local sum = 0
for i = 1, n do sum = sum + delays[i] end
local mean = sum / n
local m2 = 0
for i = 1, n do local d = delays[i] - mean; m2 = m2 + d * d end
local function at(p)
  local pos = p * (n - 1)
  local lo = math.floor(pos)
  local hi = math.min(lo + 1, n - 1)
  return delays[lo + 1] + (delays[hi + 1] - delays[lo + 1]) * (pos - lo)
end
local f = '%.17g'
local out = {tostring(n), tostring(bad), example, string.format(f, first),
  string.format(f, delays[n]), string.format(f, mean), string.format(f, math.sqrt(m2 / n)),
  string.format(f, at(0.5)), string.format(f, at(0.9))}
for i = 1, #head do out[#out + 1] = head[i] end
return out
"""


class BlockStats:
    """The statistics script, registered once with the bridge's Redis client."""

    def __init__(self, client: redis.Redis) -> None:
        self.script = client.register_script(STATS_SCRIPT)

    def read(self, key: bytes, block_hash: str, say: Say) -> Block | None:
        """The kept statistics of one ``binv:`` key; None if it holds no well-formed
        announcement or changed type. Malformed members are left out and said once
        (``say(what, message, *args)`` logs once per ``what``).

        Args:
            key: the Redis key, ``binv:<hash>``.
            block_hash: the hash, lower case.
            say: the caller's log-once.

        Returns:
            The block as kept, or None.
        """
        try:
            # Twice the head's members, spare for any the address check below refuses.
            out: list[bytes] = self.script(keys=[key], args=[2 * HEAD_SIZE])
        except redis.ResponseError as exc:  # the key changed type since ZCARD
            say(f"key:{key!r}", "skipped %r: %s", key, exc)
            return None
        nodes, bad = int(out[0]), int(out[1])
        if bad:
            say(f"member:{key!r}", "%r: %d malformed members skipped, e.g. %r", key, bad, out[2])
        if nodes == 0:
            return None
        first, last, mean, std, p50, p90 = (float(value) for value in out[3:9])
        head = []
        for member, score in zip(out[9::2], out[10::2], strict=True):
            try:
                head.append((bitnodes_member(member.decode()), round(float(score))))
            except (AddressError, UnicodeDecodeError):
                say(f"member:{key!r}", "%r: malformed member %r skipped", key, member)
            if len(head) == HEAD_SIZE:
                break
        return Block(block_hash, round(first), nodes, last, mean, std, p50, p90, head)
