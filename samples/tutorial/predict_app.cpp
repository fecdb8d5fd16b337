// predict_app.cpp: the classifier train.cpp exported, in an application linked against
// fluxion::runtime alone (no tracing, no compiler). Usage: predict_app (in train's directory)
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fluxion/compiled.h>
#include <fluxion/data.h>
#include <fluxion/safetensors.h>

namespace fx = fluxion;

int main() {
  try {
    fx::Compiled predict = fx::load("mlp_predict.fxa");  // checks the format, the checksum and this CPU first
    std::map<std::string, fx::Array> by_name;
    for (auto& [name, array] : fx::load_safetensors("mlp.safetensors")) by_name.emplace(name, array);
    fx::data::Dataset test = fx::data::subset(fx::data::fashion_mnist("test"), 0, 1000);
    by_name.emplace("images", test.inputs);

    std::vector<fx::Array> inputs;
    for (const std::string& name : predict.input_names()) inputs.push_back(by_name.at(name));
    fx::Array labels = predict.run(inputs)[0];  // i32 [1000]

    std::vector<int32_t> predicted = labels.to_vector<int32_t>(), truth = test.targets.to_vector<int32_t>();
    int right = 0;
    for (size_t i = 0; i < predicted.size(); ++i) right += predicted[i] == truth[i];
    std::printf("the exported classifier on %s: %d of %zu right\n", fx::backend_name(predict.backend()), right,
                predicted.size());
    return 0;
  } catch (const std::exception& e) {  // fx::Error names the file and what is wrong with it
    std::fprintf(stderr, "predict_app: error: %s\n", e.what());
    return 1;
  }
}
