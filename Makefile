# jaq — Audio Queue Services on JACK, in Swift.
#
#   make demo   set up (Debian packages), build, run the demo
#   make test   set up, build (debug and release), run the tests
#   make bench  set up, build release, run the benchmarks against the peer tools
#   make fuzz   the long fuzz runs (fuzz-api: 10^5 random queue API calls, 10^4 on JACK)
#   make asan-api / tsan-api   the API walk and misuse tests under AddressSanitizer / ThreadSanitizer

SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin
export DEBIAN_FRONTEND := noninteractive

# Debian packages the build, the tests and the demo need.
# gcc: the tests build the C example and a C helper with cc against libAudioToolbox.so.
PACKAGES := pkg-config gcc time libjack-jackd2-dev libsndfile1-dev libsoxr-dev jackd2 sox libsox-fmt-all \
            jack-capture jack-tools sndfile-tools ecasound

SWIFT ?= swift
SWIFT_FLAGS ?=

.PHONY: all deps build release test demo bench clean fuzz fuzz-api asan-api tsan-api

all: build

# Installs only what is missing; needs root (or sudo) the first time.
deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	  echo "jackd2 jackd/tweak_rt_limits boolean false" | $$SUDO debconf-set-selections 2>/dev/null || true; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "swift not found (expected at /opt/swift/usr/bin)"; exit 1; }

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

release: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS)

test: deps
	$(SWIFT) build $(SWIFT_FLAGS)
	$(SWIFT) build -c release $(SWIFT_FLAGS)
	$(SWIFT) test --no-parallel $(SWIFT_FLAGS)

demo: build
	./Configs/demo.sh

# jaq record against jack_capture, 2/16/64 channels, 60 s each in real time; writes Docs/benchmarks.md.
bench: release
	$(SWIFT) build -c release $(SWIFT_FLAGS) --product jaq
	.build/release/jaq-bench --seconds 60 --channels 2,16,64

# The queue API walk (Tests/AudioToolboxTests/AudioQueueAPIWalk.swift), ten times longer than
# in `make test`. JAQ_API_WALK_SEED=<n> replays a seed a failure printed.
API_WALK_TESTS := AudioQueueAPIWalkTests|AudioQueueMisuseTests
FUZZ_API_CALLS ?= 100000
FUZZ_API_JACK_CALLS ?= 10000

fuzz: fuzz-api

fuzz-api: deps
	JAQ_API_WALK_CALLS=$(FUZZ_API_CALLS) JAQ_API_WALK_JACK_CALLS=$(FUZZ_API_JACK_CALLS) \
	  $(SWIFT) test --no-parallel $(SWIFT_FLAGS) --filter '$(API_WALK_TESTS)'

# The same under the sanitizers, each in its own scratch path; any report fails the run.
asan-api: deps
	ASAN_OPTIONS=halt_on_error=1:detect_leaks=0 $(SWIFT) test --no-parallel --sanitize=address \
	  --scratch-path .build-asan $(SWIFT_FLAGS) --filter '$(API_WALK_TESTS)'

# Without the JACK walk: libjack is not instrumented, and its client thread ends "with ignores
# enabled", which ThreadSanitizer reports as an error of its own before any race.
tsan-api: deps
	TSAN_OPTIONS=halt_on_error=1 $(SWIFT) test --no-parallel --sanitize=thread \
	  --scratch-path .build-tsan $(SWIFT_FLAGS) --filter 'AudioQueueAPIWalkTests.aRandomWalkOfCallsOnTheManualDriver|AudioQueueMisuseTests'

clean:
	rm -rf .build .build-asan .build-tsan out
