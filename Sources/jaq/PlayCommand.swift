import ArgumentParser
import AudioToolbox
import FoundationEssentials
import Glibc
import JackControl
import Synchronization

/// The playback callback: refill and re-enqueue, or stop after the last frame.
private func playerCallback(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ buffer: AudioQueueBufferRef) {
    let player = Unmanaged<FilePlayer>.fromOpaque(userData!).takeUnretainedValue()
    if !player.ended.load(ordering: .relaxed), player.fill(buffer), player.enqueue(buffer, on: queue) == noErr {
        return
    }
    if !player.ended.exchange(true, ordering: .relaxed) {
        AudioQueueStop(queue, false)
    }
}

private func playerRunningListener(_ userData: UnsafeMutableRawPointer?, _ queue: AudioQueueRef, _ id: AudioQueuePropertyID) {
    let player = Unmanaged<FilePlayer>.fromOpaque(userData!).takeUnretainedValue()
    var running: UInt32 = 0
    var size = UInt32(4)
    AudioQueueGetProperty(queue, kAudioQueueProperty_IsRunning, &running, &size)
    player.isRunning.store(running != 0, ordering: .relaxed)
    player.runningEvents.add(1, ordering: .releasing)
    // The main loop sees a queue that has played out at once, not at its next look.
    mainLoopWake.post()
}

struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        _superCommandName: "jaq",
        abstract: "Play files in sync, each through its own JACK client.",
        discussion: """
        Every file gets its own audio queue (JACK client "jaq-<n>-<name>"), and all start on the \
        same JACK frame, so they are sample-aligned. Every frame of every file is played; files \
        at the server's rate are played bit-exact, others are resampled (libsoxr). jaq exits when \
        all files have played out, or stops cleanly on Ctrl-C (exit status 130).

        PORTS is a port name, a comma-separated list, a regular expression, or "system" (the \
        physical playback ports, the default). --to, --volume and --pan take N:VALUE for file N \
        (1-based) or VALUE for every file.

        Examples:
          jaq play drums.wav bass.flac vocals.aif
          jaq play --to 1:system:playback_1 --to 2:system:playback_2 l.wav r.wav
          jaq play --at 4800000 click.wav            # start on JACK frame 4800000
          jaq play --in 2 --volume 0.5 --pan 2:-1 a.wav b.wav
          jaq play --transport --loop backing.wav   # when the transport rolls
          jaq play --speed 0.75 --pitch -200 solo.wav   # slower, a tone lower
        """)

    @Argument(help: "Audio files (anything libsndfile reads: WAV, AIFF, CAF, FLAC, Ogg, MP3, ...).")
    var files: [String]

    @Option(name: .long, help: ArgumentHelp("Connect file N (or every file) to PORTS.", valueName: "[N:]ports"))
    var to: [String] = []

    @OptionGroup var levels: LevelOptions

    @Option(name: .long, help: ArgumentHelp("Start on this JACK frame (see `jaq time`).", valueName: "frame"))
    var at: Int64?

    @Option(name: .long, help: ArgumentHelp("Start after this long: seconds, m:ss, h:mm:ss, or Nf for JACK frames.", valueName: "time"),
            transform: TimeValue.parse)
    var `in`: TimeValue?

    @Flag(name: .long, help: "Start when JACK transport starts rolling.")
    var transport = false

    @Option(name: .long, help: ArgumentHelp("Time between now and the common start when none is given (as --in).", valueName: "time"),
            transform: TimeValue.parse)
    var margin: TimeValue = TimeValue(seconds: 0.25)

    @Flag(name: .long, help: "Play the files again and again until interrupted.")
    var loop = false

    @Flag(name: .shortAndLong, help: "No progress line.")
    var quiet = false

    @OptionGroup(title: "Speed and pitch") var timePitchOptions: TimePitchOptions

    @Option(name: .long, help: ArgumentHelp("The old spelling of --speed.", visibility: .hidden))
    var rate: Float?

    var timePitch: TimePitchSettings { timePitchOptions.settings(oldRate: rate) }

    @OptionGroup var clockOptions: ClockOptions

    @OptionGroup var serverOptions: ServerOptions

    @OptionGroup var privateServerOptions: PrivateServerOptions

    func validate() throws {
        do { _ = try Trigger(at: at, in: `in`, transport: transport, onEnter: false) } catch { throw ValidationError(error.description) }
        try timePitchOptions.validate(oldRate: rate, oldRateName: "--rate")
    }

    func run() throws {
        try runReportingFailure("jaq play", quiet: quiet) { try play() }
    }

    /// Values of a per-file option: file index (0-based) → value.
    func perFile(_ entries: [String], name: String, parse: (String) -> String?) throws -> [Int: String] {
        var result: [Int: String] = [:]
        for entry in entries {
            if let colon = entry.firstIndex(of: ":"), let n = Int(entry[..<colon]) {
                guard n >= 1, n <= files.count else { throw CLIError("--\(name) \(entry): there is no file \(n)", exitCode: CLIError.usage) }
                let value = String(entry[entry.index(after: colon)...])
                guard parse(value) != nil else { throw CLIError("--\(name) \(entry): not a valid value", exitCode: CLIError.usage) }
                result[n - 1] = value
            } else {
                guard parse(entry) != nil else { throw CLIError("--\(name) \(entry): not a valid value", exitCode: CLIError.usage) }
                for i in 0..<files.count where result[i] == nil { result[i] = entry }
            }
        }
        return result
    }

    func play() throws {
        let targets = try perFile(to, name: "to") { $0 }
        let volumes = try perFile(levels.volume, name: "volume") { Float($0).flatMap { (0...1).contains($0) ? "" : nil } }
        let pans = try perFile(levels.pan, name: "pan") { Float($0).flatMap { (-1...1).contains($0) ? "" : nil } }
        let players = try files.enumerated().map { try FilePlayer(path: $0.element, index: $0.offset + 1, loop: loop) }
        let startup = Watchdog(seconds: Watchdog.startupSeconds,
                               message: "the JACK server did not answer within \(Int(Watchdog.startupSeconds)) s; nothing was played")
        let server = try ServerContext(serverOptions, privateServer: privateServerOptions, clientName: "jaq-play-ctl", watchTransport: transport)
        defer { server.stop(closingSession: true) }
        let interruption = Interruption()
        let session = server.session!
        // --clock: --at names a frame of the netjack2 master (ClockCommand.swift).
        let masterClock = try clockOptions.clock.map { try MasterClock(port: $0, server: server.name) }
        defer { masterClock?.reader.close() }
        let startAt = try at.map { try masterClock?.localFrame(forMaster: $0) ?? $0 }
        if let masterClock, let at, let startAt { Log.info(masterClock.describe(master: at, local: startAt)) }

        // One queue per file.
        for player in players {
            try openQueue(for: player, server: server, target: targets[player.index - 1],
                          volume: volumes[player.index - 1].flatMap(Float.init), pan: pans[player.index - 1].flatMap(Float.init))
        }
        defer { for player in players { AudioQueueDispose(player.queue, true) } }

        if targets.count < players.count, session.audioPortNames(inputs: true, physicalOnly: true).isEmpty {
            Log.info("no physical (system) ports to play to: the players' ports stay unconnected until something connects them (or use --to)"
                     + ServerContext.noPhysicalPortsHint)
        }
        var start = try startFrame(players: players, session: session, interruption: interruption, masterClock: masterClock,
                                   startAt: startAt, startup: startup)
        for player in players {
            let status = AudioQueueStart(player.queue, &start)
            guard status == noErr else { throw CLIError("\(player.path): cannot start: \(describe(status, file: false))") }
        }
        let rate = session.sampleRate
        let longest = timePitch.playedSeconds(players.map(\.durationSeconds).max() ?? 0)
        Log.info("playing \(players.count) file\(players.count == 1 ? "" : "s") from JACK frame \(Int64(start.mSampleTime))"
                 + (loop ? ", looping" : ", \(TimeSpec.clock(Int64(longest * rate), rate: rate))"))
        // However the playing ends (every file played, a signal, an error), closing the JACK
        // clients must not hang. Written after the queues' and the session's closes, so it runs first.
        var ending = (status: Int32(1), outcome: "")
        defer { Watchdog.guardTeardown(status: ending.status, outcome: ending.outcome) }
        do {
            try waitUntilPlayed(players, start: Int64(start.mSampleTime), longest: longest, masterClock: masterClock, interruption: interruption)
        } catch let exit as ExitCode {
            ending.status = exit.rawValue
            throw exit
        }
        ending = (0, "; every file was played")
        reportLostFrames(players)
    }

    /// Opens `player`'s queue (its JACK client named for the file), connects it (--to), sets its
    /// volume, pan and time/pitch, fills three buffers and primes it.
    private func openQueue(for player: FilePlayer, server: ServerContext, target: String?, volume: Float?, pan: Float?) throws {
        var format = player.format
        var queue: AudioQueueRef?
        let user = Unmanaged.passUnretained(player).toOpaque()
        let stem = URL(fileURLWithPath: player.path).deletingPathExtension().lastPathComponent
        let clientName = "jaq-\(player.index)-\(sanitized(stem, limit: 40))"
        // With --to, connected to nothing until CurrentDevice (below) connects it there.
        let status = AudioQueueNewOutput(&format, playerCallback, user, nil, nil, 0, &queue,
                                         device: AudioQueueDevices.jack(clientName: clientName, connectingTo: target.map { _ in "" }))
        guard status == noErr, let queue else {
            throw CLIError("\(player.path): cannot open JACK client \(clientName): \(server.queueFailure(status, rate: format.mSampleRate))")
        }
        player.queue = queue
        // A decode ring of 32768 frames where that is at most 1 MiB (up to 8 channels), not the
        // queue's 16384: its thread then wakes about 8 times a second, not 12 (a stereo file:
        // 74 wake-ups in 9.2 s, not 111; issue #29). More channels keep the default.
        var decodeFrames: UInt32 = 0
        var size = UInt32(4)
        if AudioQueueGetProperty(queue, kAudioQueueProperty_DecodeBufferSizeFrames, &decodeFrames, &size) == noErr {
            let wanted = min(32768, UInt32((1 << 20) / (4 * Int(max(1, format.mChannelsPerFrame)))))
            if wanted > decodeFrames {
                decodeFrames = wanted
                AudioQueueSetProperty(queue, kAudioQueueProperty_DecodeBufferSizeFrames, &decodeFrames, 4)
            }
        }
        let configured = player.configure(queue)
        guard configured == noErr else { throw CLIError("\(player.path): the queue refuses the file's magic cookie: \(describe(configured, file: false))") }
        if let target {
            let result = setStringProperty(queue, kAudioQueueProperty_CurrentDevice, target)
            guard result == noErr else { throw CLIError("\(player.path): --to \(target): no JACK port matches: \(describe(result, file: false))") }
        }
        if let volume { AudioQueueSetParameter(queue, kAudioQueueParam_Volume, volume) }
        if let pan { AudioQueueSetParameter(queue, kAudioQueueParam_Pan, pan) }
        try timePitch.apply(to: queue, path: player.path)
        AudioQueueAddPropertyListener(queue, kAudioQueueProperty_IsRunning, playerRunningListener, user)
        for _ in 0..<3 {
            var buffer: AudioQueueBufferRef?
            let result = player.allocateBuffer(queue, &buffer)
            guard result == noErr, let buffer else { throw CLIError("\(player.path): \(describe(result, file: false))") }
            playerCallback(user, queue, buffer)
        }
        var prepared: UInt32 = 0
        let primed = AudioQueuePrime(queue, 0, &prepared)
        guard primed == noErr else { throw CLIError("\(player.path): cannot prime: \(describe(primed, file: false))") }
        if let error = player.readError.withLock({ $0 }) { throw CLIError(error) }
    }

    /// The common start frame: the trigger's (now plus --margin, --at, --in, the transport's
    /// roll), moved with the master's clock until shortly before it (--clock), and no earlier
    /// than every queue can start (unless --at names it).
    /// The server has answered once the device's time is read: `startup` is disarmed then.
    private func startFrame(players: [FilePlayer], session: JackSession, interruption: Interruption,
                            masterClock: MasterClock?, startAt: Int64?, startup: Watchdog) throws -> AudioTimeStamp {
        let rate = session.sampleRate
        var now = AudioTimeStamp()
        AudioQueueDeviceGetCurrentTime(players[0].queue, &now)
        startup.disarm()
        var start = AudioTimeStamp()
        start.mFlags = .sampleTimeValid
        var trigger = try Trigger.forCommand(at: startAt, in: `in`, transport: transport, onEnter: false)
        let nowFrame = Int64(now.mSampleTime)
        trigger.arm(now: nowFrame, deviceRate: rate, origin: nowFrame + margin.frames(at: rate),
                    transportChanges: transport ? session.transportChanges().count : 0)
        if transport { Log.info("waiting for JACK transport to roll (Ctrl-C to give up)") }
        while true {
            AudioQueueDeviceGetCurrentTime(players[0].queue, &now)
            if case .start(let frame)? = trigger.step(Trigger.Observation(now: Int64(now.mSampleTime), session: transport ? session : nil,
                                                                          enterPressed: false)) {
                start.mSampleTime = Double(frame)
                break
            }
            if let signal = interruption.signal { throw ExitCode(Interruption.exitStatus(signal)) }
            usleep(2000)
        }
        // --clock: the queues start half a second before the clocked start; until then a jump of
        // the master's clock (a cycle one server skipped) moves the start with it.
        if let masterClock, let at {
            while now.mSampleTime < start.mSampleTime - MasterClock.startMarginSeconds * rate {
                for case .jump(let frame, let by) in masterClock.reader.events()
                where masterClock.reader.deviceFrame(frame) < Int64(start.mSampleTime) {
                    start.mSampleTime -= Double(by)
                    Log.info("the clock on \(masterClock.reader.source) jumped by \(by) frames before the start (JACK frame "
                             + "\(masterClock.reader.deviceFrame(frame))): master frame \(at) is now JACK frame \(Int64(start.mSampleTime)) here")
                }
                if let signal = interruption.signal { throw ExitCode(Interruption.exitStatus(signal)) }
                usleep(2000)
                AudioQueueDeviceGetCurrentTime(players[0].queue, &now)
            }
        }
        // Every queue must be able to start then; take the latest of their earliest frames.
        for player in players {
            var earliest = start
            AudioQueueDeviceGetNearestStartTime(player.queue, &earliest, 0)
            if startAt == nil && earliest.mSampleTime > start.mSampleTime { start.mSampleTime = earliest.mSampleTime }
        }
        start.mFlags = .sampleTimeValid
        if startAt != nil, start.mSampleTime < now.mSampleTime {
            Log.info("frame \(Int64(start.mSampleTime)) has passed (now \(Int64(now.mSampleTime))): starting at once")
        }
        return start
    }

    /// Waits until every queue has played out (IsRunning went to 1 and back to 0), showing the
    /// progress; stops them all on a signal, a read error, or a jump of the master's clock
    /// before the `start` frame (which then no longer names the master's).
    private func waitUntilPlayed(_ players: [FilePlayer], start: Int64, longest: Double, masterClock: MasterClock?,
                                 interruption: Interruption) throws {
        let display = ProgressLine(enabled: !quiet && stdoutIsTerminal)
        func stopAll() {
            for player in players { AudioQueueStop(player.queue, true) }
            display.finish()
        }
        var lastLog = Date()
        while true {
            if let signal = interruption.signal {
                // The queues' stops talk to a server that may be going away too (SIGTERM sent to
                // jaq and jackd together): guarded as the clients' closes are.
                Watchdog.guardTeardown(status: Interruption.exitStatus(signal), outcome: "")
                stopAll()
                Log.info("interrupted: stopped")
                throw ExitCode(Interruption.exitStatus(signal))
            }
            for case .jump(let frame, let by) in masterClock?.reader.events() ?? []
            where masterClock!.reader.deviceFrame(frame) < start {
                stopAll()
                throw CLIError("the clock on \(masterClock!.reader.source) jumped by \(by) frames before the start (JACK frame "
                               + "\(masterClock!.reader.deviceFrame(frame))): master frame \(at!) no longer names a known frame here; stopped")
            }
            if let error = players.compactMap({ $0.readError.withLock { $0 } }).first {
                stopAll()
                throw CLIError(error)
            }
            let done = players.allSatisfy { $0.runningEvents.load(ordering: .acquiring) >= 2 && !$0.isRunning.load(ordering: .relaxed) }
            if done {
                // Queues also stop when their server goes away (jackd quit or was killed): that
                // is not "every frame played", and a script must not take it for that.
                if players.contains(where: { !QueueClock.serverIsAlive($0.queue) }) {
                    display.finish()
                    throw CLIError("the JACK server went away: playing stopped")
                }
                break
            }
            let logDue = !stdoutIsTerminal && !quiet && Date().timeIntervalSince(lastLog) >= 10
            // Nothing to show (--quiet, no terminal and no log line due): no look at the queue,
            // and no wake-up but for the queues' ends, a read error or a signal (they post
            // `mainLoopWake`), the master clock's news, and a look a second.
            guard display.enabled || logDue else {
                mainLoopWake.wait(timeout: masterClock != nil ? 0.25 : 1)
                continue
            }
            var queueTime = AudioTimeStamp()
            AudioQueueGetCurrentTime(players[0].queue, nil, &queueTime, nil)
            let elapsed = max(0, queueTime.mSampleTime / players[0].format.mSampleRate)
            let total = loop ? "loop" : TimeSpec.clock(Int64(longest * 1000), rate: 1000)
            display.update("▶ \(TimeSpec.clock(Int64(elapsed * 1000), rate: 1000)) / \(total)  \(players.count) file\(players.count == 1 ? "" : "s")")
            if logDue {
                lastLog = Date()
                print("playing: \(TimeSpec.clock(Int64(elapsed * 1000), rate: 1000))")
                fflush(nil)  // a log line for a pipe, a file or journald: now, not at exit
            }
            // A live display redraws ten times a second; with none, a slower pace costs less.
            mainLoopWake.wait(timeout: display.enabled ? 0.02 : 0.1)
        }
        display.finish()
    }

    /// Frames the server's skipped cycles (xruns) or a slow disk kept from being played, per file.
    private func reportLostFrames(_ players: [FilePlayer]) {
        var anyLost = false
        for player in players {
            var lost: UInt64 = 0
            var size = UInt32(8)
            if AudioQueueGetProperty(player.queue, kAudioQueueProperty_LostFrames, &lost, &size) == noErr, lost > 0 {
                anyLost = true
                Log.error("\(player.path): \(lost) frames not played (the server skipped cycles or the file was read too slowly); the rest played on time")
            }
        }
        if !anyLost { Log.info("done: every frame of every file played") }
    }
}
