import Engine
import Telemetry

/// A setting with a fixed set of values (`log_format`, `log_level`, `metrics_auth`): parsed into its
/// enum once, at start-up, where an unknown name is a configuration error naming the setting.
protocol SettingChoice: CaseIterable, Sendable, Equatable {
    /// The value's spelling in the config file, flags and environment.
    var settingName: String { get }
}

extension SettingChoice {
    init?(settingName: String) {
        guard let value = Self.allCases.first(where: { $0.settingName == settingName }) else { return nil }
        self = value
    }
}

extension Logger.Format: SettingChoice {
    var settingName: String { rawValue }
}

extension Logger.Level: SettingChoice {
    var settingName: String { name }
}

/// `metrics_auth`: without `metrics_api_key`, whether `/metrics` needs an API key like every other
/// endpoint (`keys`, when keys are set) or none (`open`).
public enum MetricsAuth: String, SettingChoice {
    case keys, open

    var settingName: String { rawValue }
}

extension KVCacheType: SettingChoice {
    var settingName: String { rawValue }
}
