import Telemetry
