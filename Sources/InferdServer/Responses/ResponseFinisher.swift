import Backend
import Engine
import Foundation
import HTTPServer
import Sessions

/// Ends one response: final status and usage from how its generation (or its conversation's
/// turn) ended, the last events, the stored record, the kept KV cache, and its removal from the
/// live registry, in that order (so whoever no longer finds it live finds it stored).
struct ResponseFinisher: Sendable {
    /// How the work ended, whichever path ran it.
    enum Ending: Sendable {
        case finished(text: String, reason: FinishReason, usage: GenerationUsage)
        case failed(HTTPError)
    }

    let app: InferdApp
    let run: ResponseRun
    let backend: any GenerationBackend
    let sequence: (any PredictorSequence)?
    let capacity: Int
    let requestID: String

    @discardableResult
    func finish(_ result: Result<GenerationResult, HTTPError>, cancelledBy reason: String?) async -> ResponseRecord {
        switch result {
        case .success(let r):
            await finish(.finished(text: r.content, reason: r.finishReason, usage: r.usage), cancelledBy: reason)
        case .failure(let e):
            await finish(.failed(e), cancelledBy: reason)
        }
    }

    /// A conversation's turn, as the session recorded it; `history` is its transcript now.
    @discardableResult
    func finish(turn outcome: TurnOutcome, history: [HistoryMessage]) async -> ResponseRecord {
        let usage = outcome.usage ?? GenerationUsage(promptTokens: 0, completionTokens: 0, cachedTokens: 0)
        let ending: Ending
        switch outcome.status {
        case .completed:
            ending = .finished(text: outcome.content, reason: outcome.finishReason ?? .stop, usage: usage)
        case .cancelled:
            ending = .finished(text: outcome.content, reason: .cancelled, usage: usage)
        case .failed:
            ending = .failed(InferdApp.httpError(for: outcome.error ?? .generation(.computeFailed("unknown"))))
        }
        return await finish(ending, cancelledBy: outcome.reason?.rawValue, history: history)
    }

    @discardableResult
    func finish(_ ending: Ending, cancelledBy reason: String?, history: [HistoryMessage]? = nil) async -> ResponseRecord
    {
        var ending = ending
        if run.record.response.background, app.liveResponses.isStopping {
            // Stopped by the server's shutdown, not by its owner: failed, as after a crash, and never re-run.
            switch ending {
            case .finished(_, .cancelled, _), .failed:
                ending = .failed(
                    HTTPError(
                        status: 503, message: InferdApp.interruptedMessage, type: "server_error",
                        code: InferdApp.interruptedCode))
            default:
                break
            }
        }
        let now = Int(Date().timeIntervalSince1970)
        let record: ResponseRecord
        var keep = false
        switch ending {
        case .finished(let text, let finishReason, let u):
            let usage = ResponseUsage(input: u.promptTokens, cached: u.cachedTokens, output: u.completionTokens)
            switch finishReason {
            case .cancelled:
                record = run.finish(text: text) { o in
                    o.status = "cancelled"
                    o.usage = usage
                }
            case .length:
                keep = true
                record = run.finish(text: text) { o in
                    o.status = "incomplete"
                    o.incompleteDetails = .init(reason: "max_output_tokens")
                    o.usage = usage
                }
            default:
                keep = true
                record = run.finish(text: text) { o in
                    o.status = "completed"
                    o.completedAt = now
                    o.usage = usage
                }
            }
        case .failed(let e):
            record = run.finish(text: "") { o in
                o.status = "failed"
                o.error = .init(code: e.code, message: e.message)
            }
        }
        var stored = record
        if let history {
            stored.history = history
        } else {
            stored.history.append(HistoryMessage(role: "assistant", content: record.text))
        }
        await app.persist(stored)
        app.releaseCache(
            sequence, capacity: capacity, responseID: record.response.id, keep: keep && record.response.store,
            backend: backend)
        app.liveResponses.remove(run.id)
        if record.response.status == "cancelled" {
            app.logger.info(
                "response cancelled", ["response_id": run.id, "request_id": requestID, "reason": reason ?? "cancelled"])
        }
        return record
    }
}
