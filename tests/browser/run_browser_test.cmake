# Browser test of `fprof report` (see CMakeLists.txt). Artefacts, the screenshots included, stay in
# WORK (build/tests/browser-artifacts). -DFPROF=... -DFIXTURE=... -DCHROMIUM=... -DWORK=dir -DDATA=tests/data
if(NOT CHROMIUM OR NOT EXISTS "${CHROMIUM}")
  message(FATAL_ERROR "no chromium found: run scripts/install-deps (make test does) or apt-get install chromium")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(failures "")
# check("<if() condition>" "what it means"): the condition is parsed as code, so it may name variables.
macro(check condition message)
  cmake_language(EVAL CODE "if(${condition})\n set(check_ok ON)\nelse()\n set(check_ok OFF)\nendif()")
  if(NOT check_ok)
    list(APPEND failures "${message}")
    message("FAIL ${message}")
  else()
    message("ok   ${message}")
  endif()
endmacro()

function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN}: exit ${rc}\n${out}\n${err}")
  endif()
endfunction()

foreach(kind trace counters hostile baseline)
  run("${FIXTURE}" ${kind} ${kind}.fprof)
endforeach()
run("${FPROF}" report counters.fprof --baseline baseline.fprof -o counters.html)
run("${FPROF}" report hostile.fprof -o hostile.html)
run("${FPROF}" report trace.fprof -o trace.html)
# Recordings of real programs: counters (the model on an H200) and an eager PyTorch GPT (trace).
foreach(recorded model_metrics_h200 torch_proof_gpt_bf16_eager_h100)
  run("${FPROF}" report "${DATA}/${recorded}.fprof" -o ${recorded}.html)
endforeach()

# Network off: a private network namespace where the test runs as root (CI), else a dead proxy.
# The report's Content-Security-Policy forbids fetches anyway; this makes sure nothing was needed.
set(netns "")
execute_process(COMMAND unshare -n true RESULT_VARIABLE unshare_rc OUTPUT_QUIET ERROR_QUIET)
if(unshare_rc EQUAL 0)
  set(netns unshare -n)
endif()
set(flags --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --no-first-run --disable-extensions
          --proxy-server=127.0.0.1:9 --proxy-bypass-list=<-loopback> --user-data-dir=${WORK}/profile)

# Loads a page and returns its DOM after the page's own script ran.
function(dump_dom page out_var)
  execute_process(COMMAND ${netns} "${CHROMIUM}" ${flags} --dump-dom "file://${WORK}/${page}"
                  WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE dom ERROR_VARIABLE err TIMEOUT 60)
  if(NOT rc EQUAL 0 OR dom STREQUAL "")
    message(FATAL_ERROR "chromium --dump-dom ${page}: exit ${rc}\n${err}")
  endif()
  string(REGEX REPLACE "[#?].*" "" name "${page}")
  file(WRITE "${WORK}/${name}.dom.html" "${dom}")
  set(${out_var} "${dom}" PARENT_SCOPE)
endfunction()

function(count_matches regex text out_var)
  string(REGEX MATCHALL "${regex}" hits "${text}")
  list(LENGTH hits n)
  set(${out_var} ${n} PARENT_SCOPE)
endfunction()

# 1. A run with counters and a baseline, with the page's self-test (#selftest): it sorts and
#    filters the kernel table and checks the fusion order in the page, and writes its verdict.
dump_dom("counters.html#selftest" dom)
string(REGEX MATCH "<html[^>]*>" html_tag "${dom}")
string(FIND "${html_tag}" "data-fprof-script=\"ran\"" at)
check("NOT at EQUAL -1" "the report's own script ran")
string(REGEX MATCH "<pre id=\"fprof-selftest\">([^<]*)</pre>" _ "${dom}")
set(verdict "${CMAKE_MATCH_1}")
message("self-test verdict:\n${verdict}")
string(REGEX MATCH "^PASS [0-9]+ checks" passed "${verdict}")
check("passed" "in-page self-test passed (table sorts by time, calls, mean, intensity, % of roof, name; filter; fusion order; chart by % of roof; all columns)")
count_matches("<circle class=\"pt\"" "${dom}" points)
check("points EQUAL 9" "roofline has one point per kernel group with FLOPs and bytes: 9 (got ${points})")
count_matches("<tr id=\"g[0-9]+\"" "${dom}" rows)
check("rows EQUAL 10" "kernel table lists the 10 kernel groups (got ${rows})")
count_matches("<line class=\"arrow\"" "${dom}" arrows)
check("arrows EQUAL 1" "one before->after arrow: the only group that moved (got ${arrows})")
string(REGEX MATCHALL "<td class=\"mono pair\">[^<]*</td>" pairs "${dom}")
string(REGEX REPLACE "<td class=\"mono pair\">([^<]*)</td>" "\\1" pairs "${pairs}")
string(JOIN "," pairs ${pairs})
check("pairs STREQUAL matmul_bias_relu,residual_layernorm,attention"
      "fusion table lists the reference pairs in payoff order, the one not to fuse last (got ${pairs})")
string(REGEX MATCHALL "<tr class=\"fuse\" data-payoff=\"[^\"]*\"" payoffs "${dom}")
string(REGEX REPLACE "<tr class=\"fuse\" data-payoff=\"([^\"]*)\"" "\\1" payoffs "${payoffs}")
list(GET payoffs 0 first_payoff)
list(GET payoffs 1 second_payoff)
check("first_payoff GREATER second_payoff" "payoffs decrease: ${payoffs}")
string(FIND "${dom}" "id=\"gate-verdict\">gate: FAIL<" at)
check("NOT at EQUAL -1" "gate verdict against the baseline shown (FAIL: the epilogue got 25% slower)")

# 2. A trace-only run: no fake points, and the chart says how to get them.
dump_dom("trace.html" dom)
count_matches("<circle class=\"pt\"" "${dom}" points)
check("points EQUAL 0" "trace-mode report draws no points (got ${points})")
string(FIND "${dom}" "id=\"roofline-none\"" at1)
string(FIND "${dom}" "fprof run --metrics roofline" at2)
check("NOT at1 EQUAL -1 AND NOT at2 EQUAL -1" "trace-mode report says why there is no roofline")

# 3. Hostile kernel names: each would set data-injected on <html> if it ran as markup or script.
dump_dom("hostile.html#selftest" dom)
string(REGEX MATCH "<html[^>]*>" html_tag "${dom}")
string(FIND "${html_tag}" "data-fprof-script=\"ran\"" at1)
string(FIND "${html_tag}" "data-injected" at2)
check("NOT at1 EQUAL -1" "hostile report: the report's own script ran")
check("at2 EQUAL -1" "hostile report: no injected script or handler ran (${html_tag})")
count_matches("<script" "${dom}" scripts)
check("scripts EQUAL 2" "hostile report: only the report's two script elements exist (got ${scripts})")
count_matches("<img" "${dom}" imgs)
check("imgs EQUAL 0" "hostile report: a kernel named <img onerror=...> is text, not an element")
string(FIND "${dom}" "&lt;script&gt;alert(1)&lt;/script&gt;" at)
check("NOT at EQUAL -1" "hostile report: <script>alert(1)</script> is shown as text")
string(REGEX MATCH "<pre id=\"fprof-selftest\">([^<]*)</pre>" _ "${dom}")
string(REGEX MATCH "^PASS" passed "${CMAKE_MATCH_1}")
check("passed" "hostile report: self-test passed")

# 4. The first screen is the answer. The page measures itself (#layout in the URL: its script
#    writes the viewport it had and the bounding boxes of the findings, the kernel table's "% of
#    roof", "bound" and "to gain" headers, the fusion table's "payoff" header and the folded run
#    details): in a 1400x900 viewport each must lie inside it, the details below it. Headless
#    Chromium's viewport is its window less what it keeps for window chrome, so the window is
#    grown by what the first measurement lacked, and the viewport is checked to be 1400x900.
function(dump_layout page width height out_var)
  execute_process(COMMAND ${netns} "${CHROMIUM}" ${flags} --window-size=${width},${height} --dump-dom
                          "file://${WORK}/${page}#layout"
                  WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE dom ERROR_VARIABLE err TIMEOUT 60)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "chromium --dump-dom ${page}#layout: exit ${rc}\n${err}")
  endif()
  string(REGEX MATCH "<pre id=\"fprof-layout\">([^<]*)</pre>" _ "${dom}")
  set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

function(measure_layout page width height out_var)
  dump_layout(${page} ${width} ${height} first)
  string(REGEX MATCH "viewport ([0-9]+) ([0-9]+)" _ "${first}")
  math(EXPR window_w "2 * ${width} - ${CMAKE_MATCH_1}")
  math(EXPR window_h "2 * ${height} - ${CMAKE_MATCH_2}")
  dump_layout(${page} ${window_w} ${window_h} layout)
  file(WRITE "${WORK}/${page}.${width}x${height}.layout.txt" "${layout}")
  string(REGEX MATCH "viewport ([0-9]+) ([0-9]+)" _ "${layout}")
  if(NOT CMAKE_MATCH_1 EQUAL width OR NOT CMAKE_MATCH_2 EQUAL height)
    message(FATAL_ERROR "${page}: a ${window_w}x${window_h} window gave a ${CMAKE_MATCH_1}x${CMAKE_MATCH_2} viewport, "
                        "not ${width}x${height}")
  endif()
  set(${out_var} "${layout}" PARENT_SCOPE)
endfunction()

# Sets inside_var ON when the element `name` of the measured layout lies in the viewport.
function(inside layout name inside_var)
  string(REGEX MATCH "viewport ([0-9]+) ([0-9]+)" _ "${layout}")
  set(vw ${CMAKE_MATCH_1})
  set(vh ${CMAKE_MATCH_2})
  set(ok OFF)
  if(layout MATCHES "(^|\n)${name} (-?[0-9]+) (-?[0-9]+) (-?[0-9]+) (-?[0-9]+)")
    if(CMAKE_MATCH_2 GREATER_EQUAL 0 AND CMAKE_MATCH_3 GREATER_EQUAL 0 AND CMAKE_MATCH_4 LESS_EQUAL vw AND
       CMAKE_MATCH_5 LESS_EQUAL vh)
      set(ok ON)
    endif()
  endif()
  set(${inside_var} ${ok} PARENT_SCOPE)
endfunction()

# Sets below_var ON when the element `name` starts below the viewport's bottom edge.
function(below_fold layout name below_var)
  string(REGEX MATCH "viewport ([0-9]+) ([0-9]+)" _ "${layout}")
  set(vh ${CMAKE_MATCH_2})
  set(ok OFF)
  if(layout MATCHES "(^|\n)${name} (-?[0-9]+) (-?[0-9]+) (-?[0-9]+) (-?[0-9]+)")
    if(CMAKE_MATCH_3 GREATER_EQUAL vh)
      set(ok ON)
    endif()
  endif()
  set(${below_var} ${ok} PARENT_SCOPE)
endfunction()

foreach(page counters.html model_metrics_h200.html torch_proof_gpt_bf16_eager_h100.html)
  measure_layout(${page} 1400 900 layout)
  string(REPLACE "\n" "; " shown_layout "${layout}")
  message("layout of ${page} at 1400x900: ${shown_layout}")
  set(elements findings roof bound payoff)
  if(NOT page MATCHES "eager")  # with counters, "to gain" shows too (a trace run has it under "all columns")
    list(APPEND elements gain)
  endif()
  foreach(element ${elements})
    inside("${layout}" ${element} in)
    check("in" "${page}: ${element} inside the first 1400x900 screen")
  endforeach()
  below_fold("${layout}" details below)
  check("below" "${page}: the run details start below the first screen")
  string(REGEX MATCH "scroll-width ([0-9]+)" _ "${layout}")
  check("CMAKE_MATCH_1 LESS_EQUAL 1400" "${page}: no horizontal scrolling at 1400 pixels (page ${CMAKE_MATCH_1} wide)")
endforeach()
# The same measurement in a small window must find the answer cut off: the check can fail.
measure_layout(counters.html 900 500 small)
inside("${small}" payoff in)
check("NOT in" "counters.html at 900x500: the fusion payoff is outside the viewport (the layout check can fail)")

# 5. Screenshots of the first screen (1400x900) and of whole pages, kept as artefacts.
foreach(page counters model_metrics_h200 torch_proof_gpt_bf16_eager_h100 hostile)
  foreach(size 1400,900 1400,2600)
    string(REPLACE "," "x" tag "${size}")
    execute_process(COMMAND ${netns} "${CHROMIUM}" ${flags} --window-size=${size} --screenshot=${WORK}/${page}.${tag}.png
                            "file://${WORK}/${page}.html"
                    WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET TIMEOUT 60)
    set(png_size 0)
    if(EXISTS "${WORK}/${page}.${tag}.png")
      file(SIZE "${WORK}/${page}.${tag}.png" png_size)
    endif()
    check("rc EQUAL 0 AND png_size GREATER 20000" "screenshot ${WORK}/${page}.${tag}.png written (${png_size} bytes)")
  endforeach()
endforeach()

list(LENGTH failures nfail)
if(nfail GREATER 0)
  message(FATAL_ERROR "${nfail} browser checks failed (artefacts in ${WORK})")
endif()
message("all browser checks passed; artefacts in ${WORK}")
