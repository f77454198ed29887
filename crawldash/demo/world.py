"""The made-up world of the demo's crawls: networks, clients, services, places and
providers, each with its weight, and the chains the demo's networks follow."""

from __future__ import annotations

from dataclasses import dataclass

NETWORK_WEIGHTS = (("ipv4", 55.0), ("ipv6", 15.0), ("onion", 27.7), ("i2p", 2.0), ("cjdns", 0.3))
# fmt: off
AGENTS = (
    ("/Satoshi:28.0.0/", 22), ("/Satoshi:27.1.0/", 20), ("/Satoshi:27.0.0/", 12),
    ("/Satoshi:26.0.0/", 9), ("/Satoshi:25.1.0/", 7), ("/Satoshi:24.0.1/", 6),
    ("/Satoshi:0.21.1/", 4), ("/Satoshi:28.1.0/", 6), ("/Satoshi:27.1.0(Knots:20240801)/", 6),
    ("/Satoshi:0.20.1/", 2), ("/btcd:0.24.2/", 2), ("/Satoshi:23.0.0/", 4),
)
SERVICES = ((1033, 50), (3081, 20), (1037, 15), (3077, 10), (1097, 5))
COUNTRIES = (  # (code, ((city, latitude, longitude), ...), timezone, ((asn, org), ...)), weight
    (("US", (("Ashburn", 39.0438, -77.4874), ("New York", 40.7128, -74.006),
             ("Dallas", 32.7767, -96.797), ("San Jose", 37.3382, -121.8863),
             ("Chicago", 41.8781, -87.6298), ("Seattle", 47.6062, -122.3321),
             ("Miami", 25.7617, -80.1918), ("Denver", 39.7392, -104.9903)),
      "America/New_York", (("AS14618", "Amazon.com, Inc."), ("AS7922", "Comcast Cable"))), 28),
    (("DE", (("Falkenstein", 50.4779, 12.3713), ("Nuremberg", 49.4521, 11.0767),
             ("Frankfurt am Main", 50.1109, 8.6821), ("Berlin", 52.52, 13.405),
             ("Munich", 48.1351, 11.582), ("Hamburg", 53.5511, 9.9937)),
      "Europe/Berlin", (("AS24940", "Hetzner Online GmbH"), ("AS3320", "Deutsche Telekom AG"))),
     16),
    (("FR", (("Roubaix", 50.6942, 3.1746), ("Paris", 48.8566, 2.3522), ("Lyon", 45.764, 4.8357),
             ("Gravelines", 50.9871, 2.1255)), "Europe/Paris", (("AS16276", "OVH SAS"),)), 7),
    (("NL", (("Amsterdam", 52.3676, 4.9041), ("Rotterdam", 51.9244, 4.4777),
             ("Utrecht", 52.0907, 5.1214)),
      "Europe/Amsterdam", (("AS60781", "LeaseWeb Netherlands B.V."),)), 6),
    (("CA", (("Toronto", 43.6532, -79.3832), ("Montreal", 45.5019, -73.5674),
             ("Vancouver", 49.2827, -123.1207)), "America/Toronto", (("AS812", "Rogers"),)), 5),
    (("GB", (("London", 51.5072, -0.1276), ("Manchester", 53.4808, -2.2426),
             ("Edinburgh", 55.9533, -3.1883)), "Europe/London", (("AS2856", "British Telecom"),)),
     4),
    (("FI", (("Helsinki", 60.1699, 24.9384), ("Tuusula", 60.4036, 25.0291)),
      "Europe/Helsinki", (("AS24940", "Hetzner Online GmbH"),)), 4),
    (("JP", (("Tokyo", 35.6762, 139.6503), ("Osaka", 34.6937, 135.5023)),
      "Asia/Tokyo", (("AS2516", "KDDI Corporation"),)), 3),
    (("SG", (("Singapore", 1.3521, 103.8198),),
      "Asia/Singapore", (("AS14061", "DigitalOcean, LLC"),)), 3),
    (("CH", (("Zurich", 47.3769, 8.5417), ("Geneva", 46.2044, 6.1432)),
      "Europe/Zurich", (("AS3303", "Swisscom"),)), 3),
    (("RU", (("St Petersburg", 59.8983, 30.2618), ("Moscow", 55.7558, 37.6173),
             ("Novosibirsk", 55.0084, 82.9357)), "Europe/Moscow", (("AS12389", "Rostelecom"),)), 3),
    (("AU", (("Sydney", -33.8688, 151.2093), ("Melbourne", -37.8136, 144.9631)),
      "Australia/Sydney", (("AS1221", "Telstra"),)), 2),
    (("BR", (("Sao Paulo", -23.5505, -46.6333), ("Rio de Janeiro", -22.9068, -43.1729)),
      "America/Sao_Paulo", (("AS28573", "Claro"),)), 2),
    (("SE", (("Stockholm", 59.3293, 18.0686), ("Gothenburg", 57.7089, 11.9746)),
      "Europe/Stockholm", (("AS3301", "Telia"),)), 2),
    (("ES", (("Madrid", 40.4168, -3.7038), ("Barcelona", 41.3874, 2.1686)),
      "Europe/Madrid", (("AS3352", "Telefonica"),)), 2),
    (("IT", (("Milan", 45.4642, 9.19), ("Rome", 41.9028, 12.4964)),
      "Europe/Rome", (("AS3269", "Telecom Italia"),)), 2),
    (("PL", (("Warsaw", 52.2297, 21.0122), ("Krakow", 50.0647, 19.945)),
      "Europe/Warsaw", (("AS5617", "Orange Polska"),)), 2),
    (("CZ", (("Prague", 50.0755, 14.4378),), "Europe/Prague", (("AS5610", "O2 Czech"),)), 1),
    (("ZA", (("Johannesburg", -26.2041, 28.0473), ("Cape Town", -33.9249, 18.4241)),
      "Africa/Johannesburg", (("AS37100", "SEACOM"),)), 1),
    (("AR", (("Buenos Aires", -34.6037, -58.3816),),
      "America/Argentina/Buenos_Aires", (("AS7303", "Telecom Argentina"),)), 1),
    (("IN", (("Mumbai", 19.076, 72.8777), ("Bangalore", 12.9716, 77.5946)),
      "Asia/Kolkata", (("AS9829", "BSNL"),)), 1),
)
UNKNOWN_PLACE = 0.03  # located rows whose GeoIP lookup failed: 0.0, 0.0 and no country
NEAR_A_CITY = 0.3  # rows placed in a town near a city, not at the city itself
# fmt: on
IPV6_PREFIXES = ("2a01:4f8", "2a01:4f9", "2001:41d0", "2600:1f18", "2a03:b0c0", "2604:a880")
NETWORK_ORGS = {"TOR": "Tor network", "I2P": "I2P network", "CJDNS": "CJDNS network"}
UPGRADE_TO = "/Satoshi:29.0.0/"  # the release nodes move to over the demo's days
UPGRADING = 0.35  # of the IPv4/IPv6 nodes, those that move to it by the last crawl


@dataclass(frozen=True)
class Chain:
    """A network's port and the height of its tip at BASE_TIME (1 block per 600 s)."""

    port: int
    base_height: int


BASE_TIME = 1_790_000_000
MAINNET = Chain(8333, 925_000)
TESTNET4 = Chain(48333, 102_000)
