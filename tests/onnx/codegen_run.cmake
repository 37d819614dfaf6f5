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
