#!/bin/bash
#SBATCH --gpus-per-task=1
#SBATCH --comment="random combo"
#SBATCH --gpus=a100:2
#SBATCH --mem 512
#SBATCH --array 0-99%5
#SBATCH --gres=gpu:a100:2
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
