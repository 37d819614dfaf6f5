# ctest driver of onnx.codegen.cnn: export a template graph to ONNX (`kiln export`), generate C++
# from it (`kiln codegen`), install the engine into a scratch prefix, build the generated project
# against it (find_package(Kiln)) and run its main, which exits 1 unless it reproduces the
# executor's outputs on the example inputs (rtol 1e-4, atol 1e-5).
# Inputs: -DKILN=<kiln exe> -DBUILD_DIR=<kiln build> -DGRAPH=<graph JSON> -DWORK_DIR=<scratch>
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}")
  if(rc)
    message(FATAL_ERROR "${what} failed (${rc}): ${err}")
  endif()
endfunction()
run("kiln export" ${KILN} export ${GRAPH} --out ${WORK_DIR}/model.onnx)
run("kiln codegen" ${KILN} codegen ${WORK_DIR}/model.onnx --out ${WORK_DIR}/gen --class SmallCnn)
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
run("configuring the generated project" ${CMAKE_COMMAND} -S ${WORK_DIR}/gen -B ${WORK_DIR}/gen/build -G Ninja
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
run("building the generated project" ${CMAKE_COMMAND} --build ${WORK_DIR}/gen/build)
run("the generated program (outputs against the executor)" ${WORK_DIR}/gen/build/small_cnn_main)
# The generated main refuses other arguments with its usage (exit 2) and names a file it cannot use
# (exit 1) instead of aborting.
function(expect_failure what want_rc want_err)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL want_rc OR NOT err MATCHES "${want_err}")
    message(FATAL_ERROR "${what}: exit ${rc} (want ${want_rc}), stderr lacks '${want_err}': ${err}")
  endif()
endfunction()
set(main ${WORK_DIR}/gen/build/small_cnn_main)
expect_failure("main with one argument" 2 "expected no arguments or WEIGHTS INPUTS OUTPUTS, got 1.*usage:" ${main} x)
expect_failure("main with a missing weights file" 1 "error: .*${WORK_DIR}/missing.safetensors"
               ${main} ${WORK_DIR}/missing.safetensors ${WORK_DIR}/gen/example_inputs.safetensors ${WORK_DIR}/out.safetensors)
expect_failure("main with inputs that lack the model's input" 1 "has no tensor named"
               ${main} ${WORK_DIR}/gen/small_cnn_weights.safetensors ${WORK_DIR}/gen/small_cnn_weights.safetensors
               ${WORK_DIR}/out.safetensors)
run("main --help" ${main} --help)
run("main on files given" ${main} ${WORK_DIR}/gen/small_cnn_weights.safetensors ${WORK_DIR}/gen/example_inputs.safetensors
    ${WORK_DIR}/out.safetensors)
if(NOT EXISTS ${WORK_DIR}/out.safetensors)
  message(FATAL_ERROR "main WEIGHTS INPUTS OUTPUTS did not write ${WORK_DIR}/out.safetensors")
endif()
