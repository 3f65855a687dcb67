import Testing
@testable import jaq

/// The take session's decisions without a server, a queue or a thread: looks in, steps out,
/// and how each kind of end is said and whether the files stay (TakeMachine.swift).
struct TakeMachineTests {
    typealias Look = TakeMachine.Look

    @Test func aTakeRecordsUntilItsEndAndStaysWhenItReachedIt() {
        var machine = TakeMachine(multi: false)
        #expect(machine.look(Look(framesWritten: 100, end: nil)) == .carryOn)
        #expect(machine.look(Look(framesWritten: 100, end: 200)) == .carryOn)
        #expect(machine.look(Look(framesWritten: 200, end: 200)) == .stop)
        let ending = machine.ending(writerError: nil, frames: 200, takeBegan: true)
        #expect(ending == .init(line: .recorded(reason: "duration reached"), removesFiles: false))
        #expect(machine.exitStatus == 0)
    }

    @Test func aTapeMachineGoesOnToItsNextTakeUnlessASignalCame() {
        var machine = TakeMachine(multi: true)
        machine.transportStopped()
        #expect(machine.look(Look(framesWritten: 48000, end: 48000)) == .nextTake(end: 48000))
        #expect(machine.nextTakeArmed() == "transport stopped", "the closed take's reason is said")
        #expect(machine.nextTakeArmed() == "duration reached", "and gone for the next")
        // Armed again, then Ctrl-C: the next take never rolled, its files go, nothing said of it.
        machine.signalled(isInterrupt: true)
        let ending = machine.ending(writerError: nil, frames: 0, takeBegan: false)
        #expect(ending == .init(line: .none, removesFiles: true))
        #expect(machine.exitStatus == 0)
        // A signal as a take reaches its end stops the tape machine there.
        var last = TakeMachine(multi: true)
        #expect(last.look(Look(framesWritten: 10, end: 10, signal: 15)) == .stop)
        #expect(last.ending(writerError: nil, frames: 10, takeBegan: true) == .init(line: .recorded(reason: "duration reached"), removesFiles: false))
    }

    @Test func aWriterErrorStopsTheTakeAndKeepsWhatWasWritten() {
        var machine = TakeMachine(multi: false)
        #expect(machine.look(Look(writerError: "take.wav: disk full", framesWritten: 10, end: 10)) == .stop, "before the end check")
        #expect(machine.ending(writerError: "take.wav: disk full", frames: 10, takeBegan: true)
                == .init(line: .failed("take.wav: disk full"), removesFiles: false))
        #expect(machine.exitStatus == 1)
    }

    @Test func theServerGoneEndsTheTakeWithExit1() {
        var machine = TakeMachine(multi: false)
        #expect(machine.look(Look(serverAlive: false, framesWritten: 5, end: 5)) == .stop, "before the end check")
        #expect(machine.ending(writerError: nil, frames: 5, takeBegan: true) == .init(line: .serverGone, removesFiles: false))
        #expect(machine.exitStatus == 1)
        // Gone while armed: said, and the files of a take that never began go.
        var armed = TakeMachine(multi: false)
        _ = armed.look(Look(serverAlive: false))
        #expect(armed.ending(writerError: nil, frames: 0, takeBegan: false) == .init(line: .serverGone, removesFiles: true))
    }

    @Test func aSourceLostIsTheDeviceOrTheServer() {
        var device = TakeMachine(multi: false)
        device.sourceLost(device: "system:capture_1", serverAlive: true)
        #expect(device.ending(writerError: nil, frames: 480, takeBegan: true) == .init(line: .deviceLost("system:capture_1"), removesFiles: false))
        #expect(device.exitStatus == 1)
        var server = TakeMachine(multi: false)
        server.sourceLost(device: "system:capture_1", serverAlive: false)
        #expect(server.ending(writerError: nil, frames: 480, takeBegan: true) == .init(line: .serverGone, removesFiles: false))
    }

    @Test func aTakeStoppedBeforeItsFirstFrameLeavesNoFiles() {
        var machine = TakeMachine(multi: false)
        machine.signalled(isInterrupt: false)
        // It began (its start frame was known) but no frame was written: said, and the files go.
        #expect(machine.ending(writerError: nil, frames: 0, takeBegan: true) == .init(line: .recorded(reason: "terminated"), removesFiles: true))
        #expect(machine.exitStatus == 0)
        // Ending as asked with no frame (a transport stop on the roll's frame) keeps its files.
        var asked = TakeMachine(multi: false)
        asked.transportStopped()
        #expect(asked.look(Look(framesWritten: 0, end: 0)) == .stop)
        #expect(asked.ending(writerError: nil, frames: 0, takeBegan: true) == .init(line: .recorded(reason: "transport stopped"), removesFiles: false))
    }

    @Test func aTapeMachineThatCannotGoOnStopsWithExit1() {
        var machine = TakeMachine(multi: true)
        #expect(machine.look(Look(framesWritten: 9, end: 9)) == .nextTake(end: 9))
        machine.cannotGoOn("take-002.wav: exists")
        #expect(machine.exitStatus == 1)
        #expect(machine.ending(writerError: nil, frames: 9, takeBegan: true) == .init(line: .recorded(reason: "take-002.wav: exists"), removesFiles: false))
    }
}
