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

    let archive: ResponseArchive
    let run: ResponseRun
    let backend: any GenerationBackend
    let sequence: (any PredictorSequence)?
    let capacity: Int
    let requestID: String

    /// Ends the response from its generation's outcome (a stateless generation or a conversation's
    /// turn); `history` is the conversation's transcript now, nil for a stateless response (whose
    /// history is its input and this answer).
    @discardableResult
    func finish(_ outcome: GenerationOutcome, history: [HistoryMessage]? = nil) async -> ResponseRecord {
        let ending: Ending
        switch outcome.status {
        case .completed:
            ending = .finished(text: outcome.content, reason: outcome.finishReason ?? .stop, usage: outcome.usage)
        case .cancelled:
            ending = .finished(text: outcome.content, reason: .cancelled, usage: outcome.usage)
        case .failed:
            ending = .failed(outcome.error ?? .internalError())
        }
        return await finish(ending, cancelledBy: outcome.reason?.rawValue, history: history)
    }

    @discardableResult
    func finish(_ ending: Ending, cancelledBy reason: String?, history: [HistoryMessage]? = nil) async -> ResponseRecord
    {
        var ending = ending
        if run.record.response.background, archive.live.isStopping {
            // Stopped by the server's shutdown, not by its owner: failed, as after a crash, and never re-run.
            switch ending {
            case .finished(_, .cancelled, _), .failed:
                ending = .failed(
                    HTTPError(
                        status: 503, message: ResponseArchive.interruptedMessage, type: "server_error",
                        code: ResponseArchive.interruptedCode))
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
                o.error = .init(code: e.code.rawValue, message: e.message)
            }
        }
        var stored = record
        if let history {
            stored.history = history
        } else {
            // The answer's text, its finished calls (a cut-off call is not one) and its reasoning.
            let calls = record.response.output.filter { $0.status == "completed" }.compactMap(\.call)
            let reasoning = record.response.output.first { $0.type == "reasoning" }?.text
            stored.history.append(
                HistoryMessage(
                    role: "assistant", content: record.text, toolCalls: calls.isEmpty ? nil : calls,
                    reasoning: reasoning?.isEmpty == false ? reasoning : nil))
        }
        await archive.persist(stored)
        archive.releaseCache(
            sequence, capacity: capacity, responseID: record.response.id, keep: keep && record.response.store,
            backend: backend)
        archive.live.remove(run.id)
        if record.response.status == "cancelled" {
            archive.logger.info(
                "response cancelled", ["response_id": run.id, "request_id": requestID, "reason": reason ?? "cancelled"])
        }
        return record
    }
}
