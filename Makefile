# jaq — Audio Queue Services on JACK, in Swift.
#
#   make demo   set up (Debian packages), build, run the demo
#   make test   set up, build (debug and release), run the tests (with a fresh, empty HOME: Docs/testing.md)
#   make bench  set up, build release, run the benchmarks against the peer tools
#   make soak   build release; 1 hour of 64-track recording in freewheel and 10 minutes in real time from a
#               peer player, every frame checked; jaq record's peak memory and CPU (SOAK_* settings:
#               Sources/Benchmarks/Soak/soak.sh; needs 40 GB of disk)
#   make install / uninstall   the C API, libAudioToolbox.so, jaq, pkg-config file (PREFIX, DESTDIR)
#   make deb    a Debian package of the same, in out/
#   make test-daw  the longer netjack2 (network namespaces, as root) and Ardour (headless) tests
#   make fuzz   the long runs: 10^5 hostile files, a 64-track 10-minute freewheel bounce, 10^5 queue API calls,
#               10^5 buffers of hostile packet descriptions
#   make asan   the hostile-input tests under AddressSanitizer
#   make asan-api / tsan-api   the API walk and misuse tests under AddressSanitizer / ThreadSanitizer

SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin
export DEBIAN_FRONTEND := noninteractive

# Debian packages, apart: what building needs, what make install/deb add, what the demo and the
# benchmarks run, and the tests' referees and neighbours. `make build`, `make release` and
# `make install` install only the first two; only `make test` (and the fuzz/DAW runs) installs the
# referees. `make packages-build` (…-install, -deb, -demo, -bench, -test) prints a list.
# Building: the C libraries jaq links or whose headers it compiles against (FFmpeg's libraries are
# opened at run time, their headers needed to build), and cc for the C shims.
BUILD_PACKAGES := pkg-config gcc libjack-jackd2-dev libsndfile1-dev libsoxr-dev librubberband-dev \
                  libavcodec-dev libavformat-dev libavutil-dev
# make install and make deb: patchelf sets the installed files' soname and runpath, dpkg-dev
# (dpkg-shlibdeps) finds the package's dependencies.
INSTALL_PACKAGES := patchelf dpkg-dev
# make deb: debhelper (dpkg-buildpackage runs Configs/debian/rules).
DEB_PACKAGES := $(INSTALL_PACKAGES) debhelper
# make demo: a JACK server to run on, sox to make the session.
DEMO_PACKAGES := jackd2 sox
# make bench and make soak: the peers they are compared with, /usr/bin/time (ffmpeg: the conversion bench;
# valgrind: the process callback's instructions per sample).
BENCH_PACKAGES := jackd2 time jack-capture sndfile-tools sox ffmpeg valgrind
# make test: the referees and neighbours. jack-tools, ecasound, sndfile-tools, jack-capture: the
# peers; pipewire*: jaq on a private PipeWire through its libjack (pw-jack); iproute2, nftables: the
# netjack2 tests (two network namespaces joined by a veth pair, packets dropped with nft);
# ardour: the DAW tests (ardour7-lua, ardour7-export); ffmpeg: makes and checks compressed files;
# rubberband-cli, sox: reference signals; man-db: the installed manual pages are read; lintian:
# checks the Debian packages.
TEST_PACKAGES := $(DEB_PACKAGES) lintian time jackd2 sox libsox-fmt-all jack-capture jack-tools sndfile-tools ecasound \
                 pipewire pipewire-jack pipewire-bin rubberband-cli iproute2 nftables ardour ffmpeg man-db

# install_packages(LIST, PRESEED): apt-get installs what of LIST is missing (needs root or sudo
# the first time); PRESEED, if given, is debconf answers set first (only the tests give one).
define install_packages
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	  if [ -n "$(2)" ]; then echo "$(2)" | $$SUDO debconf-set-selections 2>/dev/null || true; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

SWIFT ?= swift
SWIFT_FLAGS ?=
# Every `swift test` here runs with a fresh, empty HOME and XDG directories (removed afterwards):
# nothing this machine's user accumulated (Ardour's configuration, caches, PipeWire state) can hide
# what a new user meets. Docs/testing.md, "A fresh home". FRESH_HOME= runs them in your own HOME.
FRESH_HOME ?= Configs/fresh-home.sh

.PHONY: all deps deps-build deps-install deps-deb deps-demo deps-bench build release manual-tool test demo bench clean \
        packages-build packages-install packages-deb packages-demo packages-bench packages-test

all: build

# deps: everything (the tests'); deps-build: what building needs; the others, on top of it.
# The tests' server must not ask about realtime privileges: the preseeded answer is theirs alone
# (elsewhere apt's noninteractive frontend takes debconf's default and nothing is written).
deps: deps-build
	$(call install_packages,$(TEST_PACKAGES),jackd2 jackd/tweak_rt_limits boolean false)

deps-build:
	$(call install_packages,$(BUILD_PACKAGES))
	@command -v $(SWIFT) >/dev/null || { echo "swift not found (expected at /opt/swift/usr/bin)"; exit 1; }

deps-install: deps-build
	$(call install_packages,$(INSTALL_PACKAGES))

deps-deb: deps-build
	$(call install_packages,$(DEB_PACKAGES))

deps-demo: deps-build
	$(call install_packages,$(DEMO_PACKAGES))

deps-bench: deps-build
	$(call install_packages,$(BENCH_PACKAGES))

packages-build packages-install packages-deb packages-demo packages-bench packages-test:
	@echo $(sort $(BUILD_PACKAGES) $(if $(filter packages-build,$@),,$($(shell echo $(@:packages-%=%) | tr a-z A-Z)_PACKAGES)))

build: deps-build
	$(SWIFT) build $(SWIFT_FLAGS)

# release_build(ARGS): swift build -c release (ARGS, e.g. --product jaq) with the flags of
# Configs/release-flags.sh: the library exports the C API alone (Configs/libAudioToolbox.map),
# linked by lld. Every release build here uses them, so make test builds what make install
# ships. A whole build links the library anew: SwiftPM does not relink when only flags change,
# and a plain `swift build -c release` (which exports everything) may have made the one in place.
define release_build
	@mapfile -t flags < <(Configs/release-flags.sh $(SWIFT)) && [ $${#flags[@]} -gt 0 ] \
	  && bin=$$($(SWIFT) build -c release $(SWIFT_FLAGS) --show-bin-path) \
	  $(if $(1),,&& rm -f "$$bin/libAudioToolbox.so") && echo "$(SWIFT) build -c release $(SWIFT_FLAGS) $${flags[*]} $(1)" \
	  && $(SWIFT) build -c release $(SWIFT_FLAGS) "$${flags[@]}" $(1)
endef

release: deps-build
	$(call release_build)
	@$(MAKE) --no-print-directory manual-tool

# The manual pages (jaq.1, jaq.record.1, ...) are generated from the installed jaq's own
# description of its options by swift-argument-parser's generate-manual tool, which make install
# runs (Configs/install-docs.sh). The tool is built here, in debug: run through its SwiftPM
# plugin instead, it would build the package in release with other settings, and the next
# `swift build -c release` would compile everything again. The date on the pages is the last
# commit's (SOURCE_DATE_EPOCH wins), so the same source gives the same pages.
GENERATE_MANUAL := .build/debug/generate-manual
MANUAL_DATE ?= $(shell if [ -n "$$SOURCE_DATE_EPOCH" ]; then date -u -d @$$SOURCE_DATE_EPOCH +%F; \
                 else git log -1 --format=%cs 2>/dev/null || date -u +%F; fi)
manual-tool:
	$(SWIFT) build $(SWIFT_FLAGS) --product generate-manual

test: deps
	$(SWIFT) build $(SWIFT_FLAGS)
	$(call release_build)
	@$(MAKE) --no-print-directory manual-tool
	$(FRESH_HOME) $(SWIFT) test --no-parallel $(SWIFT_FLAGS)

demo: deps-demo build
	./Configs/demo.sh

# jaq record against jack_capture (float and 24-bit), 2/16/64 channels, 60 s each in real time;
# jaq play against sndfile-jackplay (64-channel 16-bit WAV); 10 takes of 64 tracks on a
# non-realtime server, counting the xruns jackd blames on a jaq client. Writes Docs/benchmarks.md.
# Then jaq convert (ExtAudioFile, 44.1 -> 48 kHz) against sox and ffmpeg, and the process callback's
# instructions per sample (callgrind) beside floor-record's and jack_capture's: their sections of Docs/benchmarks.md.
# Between the two, jaq record and jaq play beside the referees aq-floor-record and aq-floor-play (the
# least an Audio Queue recorder and player spend) and the floor's, printed (Docs/benchmarks.md).
bench: deps-bench release
	$(call release_build,--product jaq)
	.build/release/jaq-bench --seconds 60 --channels 2,16,64
	for tracks in 2 16 64; do Sources/Benchmarks/aq-floor.sh .build/release/jaq .build/release/aq-floor-record $$tracks 10 3; done
	for channels in 2 64; do Sources/Benchmarks/aq-floor-play.sh .build/release/jaq .build/release/aq-floor-play $$channels 10 3; done
	Sources/Benchmarks/render-bench.sh 60
	.build/release/codec-bench --seconds 60
	Sources/Benchmarks/convert-bench.sh 600 5
	Sources/Benchmarks/callback-bench.sh 64 5

# The soak (Docs/benchmarks.md, "Soak"): jaq play into jaq record in freewheel (SOAK_FREEWHEEL_SECONDS,
# default 3600) and sndfile-jackplay into jaq record in real time (SOAK_REALTIME_SECONDS, default 600),
# 64 tracks of 24-bit; every frame of every track checked (soak-check.c); prints one markdown table
# (also to SOAK_REPORT). Takes go to SOAK_DIR (default a new directory under /var/tmp), removed at the
# end unless SOAK_KEEP=1.
soak: deps-bench release
	$(call release_build,--product jaq)
	Sources/Benchmarks/Soak/soak.sh

# Late cycles on a non-realtime server, jaq record against jack_capture (Docs/queues.md, "Realtime").
bench-late: deps-bench release
	Sources/Benchmarks/late-cycles.sh

.PHONY: soak bench-late fuzz fuzz-kill fuzz-gone fuzz-streams fuzz-packets fuzz-descriptions fuzz-files fuzz-freewheel fuzz-api asan asan-api tsan-api test-daw

# The longer netjack2 tests (make test runs a compact version): a slave that records, 1 % packet loss, a slave
# leaving and returning; and the Ardour tests again (make test runs them too: takes against Ardour's export,
# a loop, DAW transport moves). Docs/cli.md, "With a DAW".
test-daw: deps
	$(SWIFT) build $(SWIFT_FLAGS)
	JAQ_DAW_LONG=1 $(FRESH_HOME) $(SWIFT) test --no-parallel $(SWIFT_FLAGS) --filter 'NetJackTests|ArdourTests'

# make fuzz: the long runs that make test runs short versions of.
fuzz: fuzz-files fuzz-streams fuzz-freewheel fuzz-api fuzz-packets fuzz-descriptions fuzz-kill fuzz-gone

# Mutants of seed files of every container and of the kept crashers; a crash or hang saves the
# mutant in out/fuzz-crashes and fails. Docs/audiofile.md, "Hostile input".
FUZZ_SEED ?= 1
FUZZ_ITERATIONS ?= 100000
fuzz-files: deps
	$(SWIFT) build $(SWIFT_FLAGS) --product FileFuzz
	JACK_NO_START_SERVER=1 .build/debug/FileFuzz fuzz --seed $(FUZZ_SEED) --iterations $(FUZZ_ITERATIONS) \
	  --corpus Tests/HostileInputTests/Fixtures --crashes out/fuzz-crashes

# The same mutants as byte streams through AudioFileStream: random splits, discontinuities, seeks
# (the short run, 1500 streams, is HostileInputTests/mutatedStreamsReturnResultCodes in make test).
fuzz-streams: deps
	$(SWIFT) build $(SWIFT_FLAGS) --product FileFuzz
	JACK_NO_START_SERVER=1 .build/debug/FileFuzz stream --seed $(FUZZ_SEED) --iterations $(FUZZ_ITERATIONS) \
	  --corpus Tests/HostileInputTests/Fixtures --crashes out/fuzz-crashes

# Mangled packets and magic cookies of AAC, ALAC, FLAC and Opus through the decoders (the short run
# of PacketCodecTests, 400 rounds a codec, is in make test): a crash fails, a refusal must be .corruptPacket.
fuzz-packets: deps
	JAQ_PACKET_FUZZ_ROUNDS=$(FUZZ_ITERATIONS) JAQ_PACKET_FUZZ_SEED=$(FUZZ_SEED) $(FRESH_HOME) $(SWIFT) test $(SWIFT_FLAGS) \
	  --filter PacketCodecTests/mangledPacketsAreRefusedNotFatal

# Hostile packet descriptions enqueued on AAC and MP3 output queues (a ManualDriver, no server; the short
# run, 600 buffers, is in make test): every enqueue gets the reference's code, what plays stays finite.
fuzz-descriptions: deps
	JAQ_DESCRIPTION_FUZZ_ITERATIONS=$(FUZZ_ITERATIONS) JAQ_DESCRIPTION_FUZZ_SEED=$(FUZZ_SEED) $(FRESH_HOME) $(SWIFT) test $(SWIFT_FLAGS) \
	  --filter HostileDescriptionTests

# The freewheel bounce at 64 tracks x 10 minutes of audio (Docs/cli.md, "Freewheel").
fuzz-freewheel: release
	JAQ_LONG=1 JAQ_BINARY=$(CURDIR)/.build/release/jaq $(FRESH_HOME) $(SWIFT) test --no-parallel $(SWIFT_FLAGS) --filter FreewheelTests/aBounceInFreewheel

# SIGTERM to a looping 64-channel jaq play and its jackd together, KILL_ROUNDS times after 15-25 s of
# playing (make test runs 3 rounds of 1-3 s): jaq play must exit with status 143 within 20 s every time,
# its close of the JACK clients ended by the teardown watchdog if libjack hangs in it. Docs/cli.md.
KILL_ROUNDS ?= 12
fuzz-kill: release
	JAQ_KILL_ROUNDS=$(KILL_ROUNDS) JAQ_KILL_SECONDS=15-25 JAQ_KILL_SEED=$(FUZZ_SEED) JAQ_BINARY=$(CURDIR)/.build/release/jaq \
	  $(FRESH_HOME) $(SWIFT) test --no-parallel $(SWIFT_FLAGS) --filter PlayEndingTests/playAndItsServerKilledTogether

# The JACK server stopped under a jaq play and a jaq record in turns, GONE_ROUNDS times, with two busy threads
# loading the machine (make test runs 4 rounds unloaded): each must exit 1 with "the JACK server went away"
# within 8 s every time, a take so far that opens. libjack's close of a client deadlocks after about one such stop in 40 to 80 (jack2 issue #395);
# jaq leaves such a close after 2 s, and the run counts the rounds where it did. Docs/queues.md.
GONE_ROUNDS ?= 200
fuzz-gone: release
	JAQ_GONE_ROUNDS=$(GONE_ROUNDS) JAQ_GONE_LOAD=1 JAQ_BINARY=$(CURDIR)/.build/release/jaq \
	  $(FRESH_HOME) $(SWIFT) test --no-parallel $(SWIFT_FLAGS) --filter PlayEndingTests/serverStoppedUnderPlayOrRecordInRounds

# make asan: the hostile-input tests (crashers, non-files, hostile formats and calls, a fuzz run) with every
# Swift target built with AddressSanitizer, in a scratch path of their own.
asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/HostileInputTests/lsan.supp \
	$(FRESH_HOME) $(SWIFT) test --sanitize=address --scratch-path .build-asan --no-parallel $(SWIFT_FLAGS) --filter HostileInputTests

# The queue API walk (Tests/AudioToolboxTests/AudioQueueAPIWalk.swift), ten times longer than
# in `make test`. JAQ_API_WALK_SEED=<n> replays a seed a failure printed.
API_WALK_TESTS := AudioQueueAPIWalkTests|AudioQueueMisuseTests
FUZZ_API_CALLS ?= 100000
FUZZ_API_JACK_CALLS ?= 10000

fuzz-api: deps
	JAQ_API_WALK_CALLS=$(FUZZ_API_CALLS) JAQ_API_WALK_JACK_CALLS=$(FUZZ_API_JACK_CALLS) \
	  $(FRESH_HOME) $(SWIFT) test --no-parallel $(SWIFT_FLAGS) --filter '$(API_WALK_TESTS)'

# The same under the sanitizers, each in its own scratch path; any report fails the run.
asan-api: deps
	ASAN_OPTIONS=halt_on_error=1:detect_leaks=0 $(FRESH_HOME) $(SWIFT) test --no-parallel --sanitize=address \
	  --scratch-path .build-asan $(SWIFT_FLAGS) --filter '$(API_WALK_TESTS)'

# Without the JACK walk: libjack is not instrumented, and its client thread ends "with ignores
# enabled", which ThreadSanitizer reports as an error of its own before any race.
tsan-api: deps
	TSAN_OPTIONS=halt_on_error=1 $(FRESH_HOME) $(SWIFT) test --no-parallel --sanitize=thread \
	  --scratch-path .build-tsan $(SWIFT_FLAGS) --filter 'AudioQueueAPIWalkTests.aRandomWalkOfCallsOnTheManualDriver|AudioQueueMisuseTests'

clean:
	rm -rf .build .build-asan .build-tsan out

# ---------------------------------------------------------------------------------------------
# make install, make uninstall, make deb (Docs/install.md).
#
# What is installed, under PREFIX (/usr/local unless given; DESTDIR is prepended to every path):
#   include/jaq/AudioToolbox, include/jaq/CoreAudio, include/jaq/CoreAudioTypes, include/jaq/CoreFoundation   the C headers, in a
#                                 directory of jaq's own (pkg-config --cflags adds -I.../include/jaq), so
#                                 nothing of jaq's sits beside GNUstep's or another CoreFoundation's
#   lib/libAudioToolbox.so.$(VERSION), .so.$(SOVERSION), .so   the library (soname .so.$(SOVERSION))
#   lib/pkgconfig/AudioToolbox.pc                              pkg-config --cflags --libs AudioToolbox
#   lib/jaq/swift/                the Swift runtime libraries the two need, from the toolchain
#   bin/jaq, share/jaq/jackd.conf   the command and its private server's settings (--private-server)
#   share/man/man1/jaq*.1.gz      the manual pages, generated from the argument parser (GENERATE_MANUAL)
#   share/bash-completion/completions/jaq, share/zsh/vendor-completions/_jaq,
#   share/fish/vendor_completions.d/jaq.fish   shell completions, from jaq --generate-completion-script
# The library's runpath is $ORIGIN/jaq/swift and jaq's is the same directory seen from bin/, so
# neither needs /opt/swift at run time (Configs/install.sh does it: soname and runpaths set with
# patchelf, as SwiftPM has no per-product linker flags). `install-built` and `deb-built` take
# the products from BUILT as they are, without building (the tests use them while `swift test`
# holds the build directory).
# The version is written once, in Sources/jaq/Version.swift (what `jaq --version` prints).
VERSION    := $(shell sed -n 's/^let jaqVersion = "\(.*\)"$$/\1/p' Sources/jaq/Version.swift)
SOVERSION  := 1
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR    ?= $(PREFIX)/share
BUILT      ?= .build/release
# STRIP=1 strips jaq, the library and the Swift runtime copies (make deb does).
STRIP      ?=
DEB_OUT    ?= out
# dpkg-deb compression: xz for a package to ship; the tests pass none (faster).
DEB_COMPRESSION ?= xz

.PHONY: install install-built uninstall deb deb-built version

# Prints the version (the packages', the library's and `jaq --version`'s).
version:
	@echo $(VERSION)

install: deps-install release
	@$(MAKE) --no-print-directory install-built

install-built:
	@BUILT='$(BUILT)' DESTDIR='$(DESTDIR)' PREFIX='$(PREFIX)' BINDIR='$(BINDIR)' LIBDIR='$(LIBDIR)' INCLUDEDIR='$(INCLUDEDIR)' \
	  DATADIR='$(DATADIR)' VERSION='$(VERSION)' SOVERSION='$(SOVERSION)' STRIP='$(STRIP)' \
	  GENERATE_MANUAL='$(GENERATE_MANUAL)' MANUAL_DATE='$(MANUAL_DATE)' Configs/install.sh

# Removes what install-built put there (only jaq's own headers, the directories if left empty).
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/jaq $(DESTDIR)$(LIBDIR)/libAudioToolbox.so $(DESTDIR)$(LIBDIR)/libAudioToolbox.so.$(SOVERSION) \
	      $(DESTDIR)$(LIBDIR)/libAudioToolbox.so.$(VERSION) $(DESTDIR)$(LIBDIR)/pkgconfig/AudioToolbox.pc
	rm -rf $(DESTDIR)$(LIBDIR)/jaq $(DESTDIR)$(DATADIR)/jaq
	rm -f $(DESTDIR)$(DATADIR)/man/man1/jaq.1.gz $(DESTDIR)$(DATADIR)/man/man1/jaq.*.1.gz \
	      $(DESTDIR)$(DATADIR)/bash-completion/completions/jaq $(DESTDIR)$(DATADIR)/zsh/vendor-completions/_jaq \
	      $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/jaq.fish
	rm -rf $(DESTDIR)$(INCLUDEDIR)/jaq
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ]; then ldconfig; fi

# The Debian packages (libaudiotoolbox1, libaudiotoolbox-dev, jaq) from Configs/debian, built by
# dpkg-buildpackage in a staged copy of the tree (Configs/debian-build.sh): `make deb` builds
# everything there, as a distribution's builder would; `make deb-built` packages the release
# products already in BUILT (the tests do). Docs/install.md, "Debian packages".
deb: deps-deb
	Configs/debian-build.sh $(DEB_OUT)

deb-built:
	DEB_COMPRESSION=$(DEB_COMPRESSION) Configs/debian-build.sh $(DEB_OUT) $(BUILT) $(GENERATE_MANUAL)
