import Foundation
import Telemetry

/// Why the remote backend could not start.
public struct RemoteSetupError: Error, CustomStringConvertible {
    public let description: String
    /// The upstream may still be starting (unreachable, or 503 while it loads).
    var retryable = false
}

extension OpenAIRemoteBackend {
    /// A backend over `settings`. When the model name or the context length is not configured,
    /// asks the upstreams' `GET /models` (in order, the first that answers) for them: the model
    /// named, else the first listed, and its `max_model_len` (vLLM), `context_length` (inferd) or
    /// `meta.n_ctx_train` (llama.cpp's server). An upstream that is still starting (unreachable,
    /// or 503 while it loads) is asked again every second for up to `patience`. Blocks the
    /// calling thread.
    public static func connect(
        settings: UpstreamSettings, logger: Logger, metrics: Metrics = Metrics(), patience: Duration = .seconds(60)
    ) throws(RemoteSetupError) -> OpenAIRemoteBackend {
        guard !settings.baseURLs.isEmpty else { throw RemoteSetupError(description: "no upstream is configured") }
        for url in settings.baseURLs {
            guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                throw RemoteSetupError(
                    description: "upstream \(UpstreamEndpoint.redacted(url)) is not an http:// or https:// URL")
            }
        }
        if !settings.model.isEmpty, settings.contextLength > 0 {
            return OpenAIRemoteBackend(
                settings: settings, modelName: settings.model, contextLength: settings.contextLength, logger: logger,
                metrics: metrics)
        }
        let giveUp = ContinuousClock.now + patience
        while true {
            do {
                return try askModels(settings: settings, logger: logger, metrics: metrics)
            } catch {
                guard error.retryable, ContinuousClock.now < giveUp else { throw error }
                logger.info("upstream not ready", ["error": error.description])
                Thread.sleep(forTimeInterval: 1)
            }
        }
    }

    private static func askModels(
        settings: UpstreamSettings, logger: Logger, metrics: Metrics
    ) throws(RemoteSetupError)
        -> OpenAIRemoteBackend
    {
        var problems: [String] = []
        var retryable = true
        for endpoint in settings.endpoints {
            let base = endpoint.displayURL
            switch fetchModels(endpoint.url, settings: settings) {
            case .failure(let why):
                problems.append("\(base)/models: \(why)")
                retryable = retryable && why.retryable
            case .success(let list):
                let entry =
                    settings.model.isEmpty
                    ? list.first : list.first { ($0["id"] as? String) == settings.model }
                guard let entry, let id = entry["id"] as? String else {
                    problems.append(
                        "\(base)/models does not list \(settings.model.isEmpty ? "a model" : settings.model)")
                    retryable = false
                    continue
                }
                let reported =
                    entry["max_model_len"] as? Int ?? entry["context_length"] as? Int
                    ?? (entry["meta"] as? [String: Any])?["n_ctx_train"] as? Int
                let context = settings.contextLength > 0 ? settings.contextLength : reported ?? 0
                guard context > 0 else {
                    throw RemoteSetupError(
                        description: "\(base)/models reports no context length for \(id): set context_length")
                }
                logger.info("upstream model", ["upstream": base, "model": id, "context_length": "\(context)"])
                return OpenAIRemoteBackend(
                    settings: settings, modelName: id, contextLength: context, logger: logger, metrics: metrics)
            }
        }
        throw RemoteSetupError(
            description: "no upstream answered GET /models (\(problems.joined(separator: "; "))); "
                + "set upstream_model and context_length to start without asking",
            retryable: retryable)
    }

    private static func fetchModels(_ base: String, settings: UpstreamSettings) -> Result<
        [[String: Any]], RemoteSetupError
    > {
        final class Body: @unchecked Sendable { var lines: [String] = [] }
        let body = Body()
        var options = settings.transfer
        options.firstByteTimeout = .seconds(10)
        options.idleTimeout = .seconds(10)
        options.deadline = .now + .seconds(30)
        let transfer = HTTPTransfer(
            HTTPTransferRequest(
                url: base + "/models", method: .get, headers: settings.headers.filter { !$0.hasPrefix("Accept") }),
            options: options
        ) { line in
            body.lines.append(line)
            return body.lines.count < 10_000
        }
        switch transfer.run() {
        case .finished(let r) where (200..<300).contains(r.status):
            let text = body.lines.joined(separator: "\n")
            guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
                let data = object["data"] as? [[String: Any]]
            else { return .failure(RemoteSetupError(description: "the answer is not a model list")) }
            return .success(data)
        case .finished(let r):
            return .failure(
                RemoteSetupError(
                    description: "answered \(r.status): \(upstreamMessage(r.errorBody))", retryable: r.status == 503))
        case .failed(let e):
            if case .unreachable = e { return .failure(RemoteSetupError(description: e.description, retryable: true)) }
            return .failure(RemoteSetupError(description: e.description))
        case .cancelled, .deadlinePassed, .stoppedByHandler:
            return .failure(RemoteSetupError(description: "no complete answer in time"))
        }
    }
}
