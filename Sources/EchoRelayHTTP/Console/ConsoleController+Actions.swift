import EchoRelayCore
import Hummingbird
import Logging

/// The console's forms that change something: replaying one event, a bulk replay, cancelling
/// a replay, redriving dead letters. Each is a POST with the session's CSRF token; each that
/// sends deliveries first shows what it will do and runs only when that page is confirmed
/// (`confirm=yes`). The fields are checked by the support API's own parsers, so errors name
/// the same fields, and the store writes the same audit entries.
extension ConsoleController {
    @Sendable func replayEvent(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let id = try context.parameters.decoded("id")
            let form = signed.form!
            var problems: [FieldProblem] = []
            if form.value("subscriptions_listed") != nil && form.values("subscription_ids").isEmpty {
                problems.append(FieldProblem(field: "subscription_ids", reason: "choose at least one subscription"))
            }
            let parsed = Self.parse(form.json(strings: ["reason"], lists: ["subscription_ids"])) { try ReplayEventRequest.parse($0) }
            guard problems.isEmpty, case .success(let body) = parsed else {
                if case .failure(let refused) = parsed { problems += refused.fields }
                return try await eventPage(signed, id: id, notice: nil, problem: .init(title: "Not replayed", detail: nil, fields: problems),
                                           reasonDraft: form.value("reason") ?? "", status: .unprocessableContent)
            }
            guard form.value("confirm") == "yes" else {
                guard let event = try await store.event(id: id) else { throw Problem.notFound("no event with id \"\(id)\"") }
                let targets = body.subscriptionIDs ?? []
                return signed.page("confirm", title: "Replay \(id)?", ConfirmPage(
                    heading: "Replay event \(id)?",
                    summary: "The \(event.type.rawValue) event of user \(event.userID) (sequence \(event.sequence)) will be sent again"
                        + (targets.isEmpty ? " to every subscription that wants it" : " to \(targets.count) subscription\(targets.count == 1 ? "" : "s")")
                        + ", with its webhook-id and marked as a replay.",
                    items: targets, reason: body.reason, action: ConsolePath.event(id) + "/replay",
                    fields: [.init(name: "reason", value: body.reason)] + targets.map { .init(name: "subscription_ids", value: $0) },
                    button: "Replay now", cancel: ConsolePath.event(id)
                ))
            }
            let receipt: ReplayReceipt
            do {
                receipt = try await store.replayEvent(id: id, subscriptionIDs: body.subscriptionIDs, actor: signed.actor, reason: body.reason)
            } catch let error as ReplayError {
                throw Problem(error, eventID: id)
            }
            workCreated(.delivery)
            metrics.replayRequested(kind: .event)
            context.logger.info("event replayed from the console", metadata: [
                "event.id": "\(id)", "replay.id": "\(receipt.id)", "actor": "\(signed.actor.name)", "matched": "\(receipt.matched)",
            ])
            return ConsoleRenderer.redirect(to: ConsolePath.event(id) + "?" + ConsolePath.query([("replayed", receipt.id)]))
        }
    }

    @Sendable func bulkReplayForm(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            // Prefilled from links such as the user page's "Bulk replay of this user".
            let query = request.uri.queryParameters
            let prefilled = ConsoleForm(fields: ["user_id", "subscription_id", "status"].compactMap { name in
                query.get(name).map { (name, $0) }
            })
            return signed.page("bulk_replay", title: "Bulk replay", BulkReplayPage(prefilled))
        }
    }

    @Sendable func bulkReplay(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let form = signed.form!
            let json = form.json(strings: ["reason", "user_id", "subscription_id", "since", "until", "status"], lists: ["types"])
            let body: BulkReplayRequest
            switch Self.parse(json, BulkReplayRequest.parse) {
            case .success(let parsed): body = parsed
            case .failure(let refused):
                return signed.page("bulk_replay", title: "Bulk replay", status: .unprocessableContent,
                                   problem: .init(title: "Not replayed", detail: nil, fields: refused.fields), BulkReplayPage(form))
            }
            guard form.value("confirm") == "yes" else {
                let matched = try await store.countReplay(body.filter)
                guard matched > 0 else {
                    return signed.page("bulk_replay", title: "Bulk replay", notice: "No delivery matches this filter: nothing to replay.",
                                       BulkReplayPage(form))
                }
                let filterText = String(decoding: body.filter.json.canonicalEncoding(), as: UTF8.self)
                return signed.page("confirm", title: "Start the bulk replay?", ConfirmPage(
                    heading: "Replay \(matched) deliver\(matched == 1 ? "y" : "ies")?",
                    summary: "\(matched) deliver\(matched == 1 ? "y" : "ies") — (event, subscription) pairs — match \(filterText == "{}" ? "no filter: everything" : filterText). "
                        + "They are sent again in each user's order, at the replay rate, and you can follow and cancel the replay on its page.",
                    items: [], reason: body.reason, action: "/console/replays",
                    fields: form.fields.filter { !["csrf", "confirm"].contains($0.name) }.map { .init(name: $0.name, value: $0.value) },
                    button: "Start replay", cancel: "/console/replays/new"
                ))
            }
            let replay: Replay
            do {
                replay = try await store.startReplay(body.filter, actor: signed.actor, reason: body.reason)
            } catch ReplayError.nothingMatched {
                // The deliveries counted at the confirmation stopped matching since.
                return signed.page("bulk_replay", title: "Bulk replay", notice: "No delivery matches this filter: nothing to replay.",
                                   BulkReplayPage(form))
            }
            workCreated(.replay)
            metrics.replayRequested(kind: .bulk)
            context.logger.info("bulk replay started from the console", metadata: [
                "replay.id": "\(replay.id)", "actor": "\(signed.actor.name)", "matched": "\(replay.matched)",
            ])
            return ConsoleRenderer.redirect(to: ConsolePath.replay(replay.id))
        }
    }

    @Sendable func cancelReplay(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let id = try context.parameters.decoded("id")
            let body: ReasonRequest
            switch Self.parse(signed.form!.json(strings: ["reason"]), ReasonRequest.parse) {
            case .success(let parsed): body = parsed
            case .failure(let refused):
                throw Problem(.unprocessableContent, slug: "invalid-request", title: "Not cancelled", errors: refused.fields)
            }
            do {
                guard try await store.cancelReplay(id: id, actor: signed.actor, reason: body.reason) != nil else {
                    throw Problem.notFound("no replay with id \"\(id)\"")
                }
            } catch let error as ReplayError {
                throw Problem(error, replayID: id)
            }
            context.logger.info("replay cancelled from the console", metadata: ["replay.id": "\(id)", "actor": "\(signed.actor.name)"])
            return ConsoleRenderer.redirect(to: ConsolePath.replay(id))
        }
    }

    @Sendable func redrive(_ request: Request, context: Context) async throws -> Response {
        await signedIn(request, context: context) { signed in
            let form = signed.form!
            let body: RedriveRequest
            switch Self.parse(form.json(strings: ["reason", "subscription_id"]), RedriveRequest.parse) {
            case .success(let parsed): body = parsed
            case .failure(let refused):
                throw Problem(.unprocessableContent, slug: "invalid-request", title: "Not redriven", errors: refused.fields)
            }
            let back = "/console/dead-letters" + (body.filter.subscriptionID.map { "?" + ConsolePath.query([("subscription_id", $0)]) } ?? "")
            guard form.value("confirm") == "yes" else {
                let matched = try await store.redriveDeadLetters(body.filter, dryRun: true, actor: signed.actor, reason: body.reason)
                return signed.page("confirm", title: "Redrive dead letters?", ConfirmPage(
                    heading: "Redrive \(matched) dead letter\(matched == 1 ? "" : "s")?",
                    summary: "\(matched) dead letter\(matched == 1 ? "" : "s")"
                        + (body.filter.subscriptionID.map { " of subscription \($0)" } ?? "")
                        + " will be sent again with a fresh retry schedule and their webhook-ids.",
                    items: [], reason: body.reason, action: "/console/dead-letters/redrive",
                    fields: [.init(name: "reason", value: body.reason)]
                        + (body.filter.subscriptionID.map { [.init(name: "subscription_id", value: $0)] } ?? []),
                    button: "Redrive now", cancel: back
                ))
            }
            let matched = try await store.redriveDeadLetters(body.filter, dryRun: false, actor: signed.actor, reason: body.reason)
            workCreated(.delivery)
            context.logger.info("dead letters redriven from the console", metadata: ["actor": "\(signed.actor.name)", "matched": "\(matched)"])
            return ConsoleRenderer.redirect(to: back + (back.contains("?") ? "&" : "?") + "redriven=\(matched)")
        }
    }

    /// A form's JSON through the API's parser: the request, or the problems it names.
    static func parse<Body>(_ json: JSONValue, _ parser: ([UInt8]) throws -> Body) -> Result<Body, FormProblems> {
        do {
            return .success(try parser(Array(json.canonicalEncoding())))
        } catch EventParseError.invalidFields(let problems) {
            return .failure(FormProblems(fields: problems))
        } catch {
            return .failure(FormProblems(fields: [FieldProblem(field: "form", reason: "\(error)")]))
        }
    }
}

/// The fields a form got wrong, each with its reason.
struct FormProblems: Error {
    let fields: [FieldProblem]
}
