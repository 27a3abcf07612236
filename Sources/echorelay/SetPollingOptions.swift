import ArgumentParser

/// `serve`'s settings of the Shared Signals transmitter's management and poll endpoints.
struct SetPollingOptions: ParsableArguments {
    @Option(name: .customLong(ServeSettings.setTransmitterToken.flag), help: ServeSettings.setTransmitterToken.argumentHelp)
    var setTransmitterToken: String?

    @Option(name: .customLong(ServeSettings.setPollURL.flag), help: ServeSettings.setPollURL.argumentHelp)
    var setPollURL: String?

    @Option(name: .customLong(ServeSettings.setPollToken.flag), help: ServeSettings.setPollToken.argumentHelp)
    var setPollToken: String?

    @Option(name: .customLong(ServeSettings.setPollWait.flag), help: ServeSettings.setPollWait.argumentHelp)
    var setPollWait: String?

    @Option(name: .customLong(ServeSettings.setPollMaxEvents.flag), help: ServeSettings.setPollMaxEvents.argumentHelp)
    var setPollMaxEvents: Int?
}
